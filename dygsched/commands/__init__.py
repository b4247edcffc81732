"""The commands that do not launch a run: each one reads the composed configuration and hands a stage
typed values (``advise``)."""
