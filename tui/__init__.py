"""The coopcode Textual app."""
