"""The base of the app's parts: the mixins ``WorkstationApp`` is made of (``Toasts``,
``StatusLine``, …), each a domain of the app's methods sharing its one ``self``."""

from __future__ import annotations

from textual.message_pump import _MessagePumpMeta


class AppPart(metaclass=_MessagePumpMeta):
    """A part of ``WorkstationApp``, mixed in before Textual's ``App``. Textual's metaclass,
    because ``@on`` handlers in a plain mixin are dropped without a word: the metaclass gathers
    a class's ``@on`` handlers, and only classes it made are read for them
    (https://github.com/Textualize/textual/issues/3930). Methods annotate ``self: WorkstationApp``,
    as ``AppScreen.wapp`` does: the state is the app's, set in its ``__init__``."""
