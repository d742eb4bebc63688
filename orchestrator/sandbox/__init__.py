"""Where model-written commands and files run: the workspace and the sandboxed executor."""
