"""The commands that do not launch a run: they read what runs left (``dygsched predict`` and ``embed``)."""
