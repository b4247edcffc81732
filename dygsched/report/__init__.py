"""The paper report: every paper target's tables and figures beside the published numbers (`dygsched report`)."""
