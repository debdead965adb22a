"""E-mails (.eml) read into a ``Document``: the decoded headers, the text body (else the HTML
one, through the HTML reader's extraction), a line naming the attachments, then the text of
each attached document the app reads (a PDF, Word, OpenDocument, RTF, HTML or text file), as a
section of its own: an e-mail's point is often its attachment ("the contract is attached")."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

from workstation.core.documents import (
    SUPPORTED_SUFFIXES,
    Document,
    DocumentBuilder,
    DocumentError,
    Limits,
    add_html,
    name_is_text,
    short_error,
)

# --- e-mail (.eml) ------------------------------------------------------------------------------
_EMAIL_HEADERS = ("From", "To", "Cc", "Date", "Subject")


def _header(msg: Any, key: str) -> str:
    """A header's values, decoded (=?UTF-8?B?...?=) and on one line; a header the parser
    cannot take is decoded from its raw text."""
    try:
        values = [str(v) for v in msg.get_all(key, [])]
    except Exception:  # noqa: BLE001 - the stdlib's header parser fails on some damaged headers
        from email.header import decode_header, make_header

        values = []
        for k, raw in msg.raw_items():
            if k.lower() == key.lower():
                try:
                    values.append(str(make_header(decode_header(raw))))
                except Exception:  # noqa: BLE001
                    values.append(raw)
    return " ".join(", ".join(values).split())


def _part_text(part: Any) -> str:
    """A text part's content: its transfer encoding (quoted-printable, base64) and charset
    undone; an unknown charset as UTF-8, wrong bytes replaced."""
    try:
        return str(part.get_content())
    except Exception:  # noqa: BLE001 - an unknown charset (LookupError), a damaged part
        payload = part.get_payload(decode=True)
        return payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload or "")


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.0f} KB" if n < 2**20 else f"{n / 2**20:.1f} MB"


# attachments read as documents: not an e-mail within the e-mail (its own attachments: no end)
_READ_ATTACHED = tuple(s for s in SUPPORTED_SUFFIXES if s != ".eml")
_MAX_READ_ATTACHMENTS = 20  # more are named only


def _attached_text(filename: str, payload: bytes, limits: Limits, deadline: float, used_chars: int) -> str:
    """The text of an attached document, read as the same file on disk is (its reader's own
    checks and the e-mail's remaining limits: characters, time); DocumentError says why not."""
    from workstation.core.documents import read_document

    name = filename if not filename.startswith(".") and name_is_text(filename) else "attachment" + Path(filename).suffix
    left = dataclasses.replace(
        limits, max_text_chars=max(1, limits.max_text_chars - used_chars),
        timeout_s=max(0.0, deadline - time.monotonic()),
    )
    with tempfile.TemporaryDirectory(prefix="ws-attachment-") as folder:
        path = Path(folder) / name
        path.write_bytes(payload)
        return read_document(path, left).text


def read_email(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    """An e-mail saved as .eml: From, To, Cc, Date and Subject (decoded), then the body (its
    text part, else its HTML part read as an HTML file is), then a line naming the attachments
    and their sizes (not their content). It was read raw: MIME headers, quoted-printable,
    base64 attachments. Attached documents it can read (up to 20) follow, each a section
    "Attachment: NAME"; one it cannot read is named with why ("not read: …")."""
    import email
    from email import policy

    name = path.name
    try:
        msg = email.message_from_bytes(data, policy=policy.default)
    except RecursionError:
        raise  # (parts nested thousands deep: 'nested too deeply', from read_document)
    except Exception as err:  # noqa: BLE001 - the parser is lenient; a failure is a damaged file
        raise DocumentError(said=[("doc.invalid", {"name": name, "what": "e-mail", "detail": short_error(err)})]) from None
    builder = DocumentBuilder(name, limits, deadline)
    header = [f"{key}: {value}" for key in _EMAIL_HEADERS if (value := _header(msg, key))]
    if header:
        builder.add("\n".join(header))
    try:
        body = msg.get_body(preferencelist=("plain", "html"))
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001
        body = None
    if body is not None:
        text = _part_text(body)
        if body.get_content_subtype() == "html":
            add_html(builder, text, name)
        else:
            text = "\n".join(line.rstrip(" \t") for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
            if text.strip():
                builder.add(text.strip())
    attachments: list[str] = []
    attached: list[tuple[str, str]] = []  # (name, text) of the attachments read
    stack: list[Any] = [msg]
    while stack:  # (a stack, not the stdlib's recursive walk: parts nest as deep as a sender likes)
        part = stack.pop()
        if time.monotonic() > deadline:
            builder.add("")  # raises the timeout error
        if part is body:
            continue
        if part is not msg and part.get_content_type() == "message/rfc822":  # a forwarded e-mail
            inner = part.get_payload()
            subject = _header(inner[0], "Subject") if isinstance(inner, list) and inner else ""
            attachments.append(part.get_filename() or (f"e-mail '{subject}'" if subject else "e-mail"))
            continue
        if part.is_multipart():
            payload = part.get_payload()
            stack.extend(reversed(payload if isinstance(payload, list) else []))
            continue
        try:
            filename = part.get_filename()
        except Exception:  # noqa: BLE001
            filename = None
        if filename:  # its name, never a folder of the sender's choosing ("../../x.docx")
            filename = Path(filename.replace("\\", "/")).name or filename
        if not filename and part.get_content_disposition() != "attachment" and part.get_content_maintype() == "text":
            continue  # the body's other form (the HTML beside the text)
        payload = part.get_payload(decode=True)
        size = _size(len(payload)) if isinstance(payload, bytes) else ""
        note = ""
        if (filename and payload and isinstance(payload, bytes) and len(attached) < _MAX_READ_ATTACHMENTS
                and Path(filename).suffix.lower() in _READ_ATTACHED):
            try:
                attached.append((filename, _attached_text(filename, payload, limits, deadline, builder.length)))
                note = ", read below"
            except DocumentError as err:
                if time.monotonic() > deadline:
                    builder.add("")  # raises the timeout error: the e-mail's, not the attachment's
                note = f"; not read: {str(err).rstrip('.')}"
        attachments.append(f"{filename or part.get_content_type()}" + (f" ({size}{note})" if size else ""))
    if attachments:
        builder.add(f"Attachments ({len(attachments)}): " + ", ".join(attachments))
    for filename, text in attached:
        title = f"Attachment: {filename}"
        builder.add(f"{title}\n{text}", title=title)
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "email", builder.text(), builder.sections)
