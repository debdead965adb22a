"""The Textual app: it renders core objects and sends the engine commands; nothing more."""
