"""The multipart body of ``POST /v1/orders``: the form, and the ticket PDF streamed to disk, cut off past the
size limit.

Django's default handlers keep small files in memory and would read any size to the end; this handler writes
every chunk of the ``file`` part straight to a temporary file (in ``FILE_UPLOAD_TEMP_DIR``) and stops the
parser as soon as the part goes past ``ORDER_PDF_MAX_BYTES``. The rest of the body is never read, the partial
temporary file is deleted at once, and the view answers 400 VALIDATION_ERROR (``issue: too_large``).
File parts under any other name are read and thrown away, within the same limit.

A form without a file (``mobile_transfer``, ``mobile_qr``) is read by :class:`OrderFormParser` in one pass.
"""

import io
import re
import secrets

from django.conf import settings
from django.core.files.base import File
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict
from rest_framework.parsers import DataAndFiles, MultiPartParser, get_encoding

PDF_MAGIC = b"%PDF-"
FILE_FIELD = "file"


class TicketPdfUploadHandler(FileUploadHandler):
    # 64 KiB reads: the most the parser holds in memory for a file at any moment.
    chunk_size = 64 * 1024

    def __init__(self, request=None, *, max_bytes: int) -> None:
        super().__init__(request)
        self.max_bytes = max_bytes
        self.too_large_field: str | None = None
        self._discard = False
        # ``self.file`` is set only once a file part starts: Django's parser closes ``handler.file`` on a
        # StopUpload, so it must be the temporary file or absent.

    def new_file(
        self, field_name, file_name, content_type, content_length, charset=None, content_type_extra=None
    ):
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        self._discard = field_name != FILE_FIELD
        if not self._discard:
            self.file = TemporaryUploadedFile(
                self.file_name, self.content_type, 0, self.charset, self.content_type_extra
            )

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        if start + len(raw_data) > self.max_bytes:
            self.too_large_field = self.field_name
            if not self._discard:
                self.file.close()  # deletes the partial temporary file now, not at the end of the request
            raise StopUpload(connection_reset=True)
        if not self._discard:
            self.file.write(raw_data)
        return None

    def file_complete(self, file_size: int):
        if self._discard:
            return None
        self.file.seek(0)
        self.file.size = file_size
        return self.file


def is_pdf(upload: File) -> bool:
    """A PDF starts with ``%PDF-`` (ISO 32000-1, 7.5.2); the name and the declared content type prove nothing."""
    upload.seek(0)
    head = upload.read(len(PDF_MAGIC))
    upload.seek(0)
    return head == PDF_MAGIC


def ticket_pdf_store(*, order_id: str, upload: File) -> str:
    """Save the PDF in the default storage under a name nobody can guess; return the stored name.

    The file-system storage moves the temporary file into place; S3 streams it in parts. Neither reads the
    whole file into memory.
    """
    name = f"tickets/{secrets.token_urlsafe(24)}/{order_id}.pdf"
    upload.seek(0)
    return default_storage.save(name, upload)


def ticket_pdf_delete(name: str) -> None:
    if name:
        default_storage.delete(name)


# The shape every client gives a form of text fields (Django's test client, requests, httpx, curl, Go's
# mime/multipart): an unquoted boundary, and each part one Content-Disposition header naming its field.
_FORM_CONTENT_TYPE = re.compile(r"multipart/form-data; boundary=([0-9A-Za-z'()+_,\-./:=?]{1,70})")
_FIELD_PART = re.compile(rb'\r\nContent-Disposition: form-data; name="([A-Za-z0-9_]{1,64})"\r\n\r\n')
# A body up to this size is read at once, to be split in one pass if it has that shape.
FORM_IN_ONE_PASS_MAX_BYTES = 8 * 1024


class OrderFormParser(MultiPartParser):
    """DRF's multipart parser, reading a form of text fields alone in one pass.

    Django's parser streams every body through its boundary scanner and header parser part by part: for the
    three to eight short fields of an order without a file, ten times the CPU of splitting the body. A body of
    at most ``FORM_IN_ONE_PASS_MAX_BYTES`` whose parts all have the shape of ``_FIELD_PART`` (no file, no other
    header), with no preamble nor epilogue and within Django's limits, is split here into what Django's parser
    gives for it: the fields in order, decoded with the request's charset, invalid bytes replaced, in an
    immutable ``QueryDict``, and no files. The order's upload handler does nothing with a body without a file.
    Any other body (a file, another header, a quoted boundary, a larger body) goes to Django's parser as it is.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        try:
            length = int(parser_context["request"].META.get("CONTENT_LENGTH") or 0)
        except (KeyError, ValueError, TypeError):
            length = 0
        if not 0 < length <= FORM_IN_ONE_PASS_MAX_BYTES:
            return super().parse(stream, media_type, parser_context)
        body = stream.read(length)
        fields = _fields_in_one_pass(body, media_type or "", get_encoding(parser_context))
        if fields is None:
            return super().parse(io.BytesIO(body), media_type, parser_context)
        return DataAndFiles(fields, MultiValueDict())


def _fields_in_one_pass(body: bytes, content_type: str, encoding: str) -> QueryDict | None:
    """The form's fields, or None when the body is not a form of text fields in the usual shape."""
    found = _FORM_CONTENT_TYPE.fullmatch(content_type)
    if found is None:
        return None
    # The boundary delimits a part wherever it appears, as for Django's parser; the CRLF before it is the part's.
    pieces = body.split(b"--" + found.group(1).encode("ascii"))
    if len(pieces) < 3 or pieces[0] or pieces[-1] not in (b"--", b"--\r\n"):
        return None
    most_fields = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    most_bytes = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if (most_fields is not None and len(pieces) > most_fields) or (
        most_bytes is not None and len(body) > most_bytes
    ):
        return None  # Django's parser refuses it as it does
    fields = QueryDict(mutable=True)
    for piece in pieces[1:-1]:
        if not piece.endswith(b"\r\n"):
            return None
        part = piece[:-2]
        header = _FIELD_PART.match(part)
        if header is None:
            return None
        fields.appendlist(
            header.group(1).decode("ascii"), part[header.end() :].decode(encoding, errors="replace")
        )
    fields._mutable = False
    return fields
