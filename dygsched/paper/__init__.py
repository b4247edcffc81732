"""The papers' tables and figures as package code: one module per paper (its targets, builders and
readings), ``published/`` (the papers' printed numbers), the sweep runner and ``dygsched paper``'s
machinery. ``registry`` lists every target; ``target`` says what one is."""
