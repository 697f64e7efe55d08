"""The broker's request processors, one module per family of request codes."""
