"""The multipart body of ``POST /v1/orders``: the form, and the ticket PDF streamed to disk, cut off past the
size limit.

Django's default handlers keep small files in memory and would read any size to the end; this handler writes
every chunk of the ``file`` part straight to a temporary file (in ``FILE_UPLOAD_TEMP_DIR``) and stops the
parser as soon as the part goes past ``ORDER_PDF_MAX_BYTES``. The rest of the body is never read, the partial
temporary file is deleted at once, and the view answers 400 VALIDATION_ERROR (``issue: too_large``).
File parts under any other name are read and thrown away, within the same limit.
"""

import secrets

from django.core.files.base import File
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload

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
