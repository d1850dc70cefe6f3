"""coopcode: run, evaluate and train cooperating code LLMs."""
__version__ = "0.1.0"
