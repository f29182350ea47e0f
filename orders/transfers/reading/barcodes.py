"""Reading a ticket file: a PDF's pages rendered and their barcodes decoded, or an image's barcodes, within
the limits of docs/architecture/transfers.md "Transfer detection" (20 pages, 10 s of decoding per file counted in
the reading thread's CPU time, the upload's size limit).

``ticket_file_read_isolated`` reads a file in a child process (an address-space and a CPU rlimit, killed at
10 s of wall time), which is how every ticket file is read. ``ticket_file_read`` never raises on what the file
holds: an encrypted, corrupt, oversized or too slow file
comes back as a ``FileReading`` whose ``verdict`` says so. The barcodes' text lives only in memory here: the
``repr`` of a ``ReadBarcode`` shows its last 4 characters, so a log line or a traceback never carries one.
"""

from __future__ import annotations

import io
import json
import math
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_raw
import zxingcpp
from django.conf import settings
from PIL import Image, UnidentifiedImageError

MAX_PAGES = 20
MAX_DECODE_SECONDS = 10.0  # CPU seconds of the reading thread (rendering and decoding)
# Each page is decoded at 216 dpi and again at 144 dpi, and the pass that found more barcodes counts: a
# symbol whose module width falls badly on one pixel grid (Code 128 above all) reads on the other. A page
# is never rendered past MAX_PAGE_PIXELS, whatever its size.
RENDER_SCALES = (3.0, 2.0)
MAX_PAGE_PIXELS = 16_000_000
MAX_IMAGE_PIXELS = 40_000_000
FORMATS = (zxingcpp.QRCode, zxingcpp.PDF417, zxingcpp.Aztec, zxingcpp.DataMatrix, zxingcpp.Code128)
IMAGE_FORMATS = ("PNG", "JPEG", "GIF", "WEBP")
PDF_MAGIC = b"%PDF-"

# PDFium is not thread-safe: one document at a time in a process (a worker's threads).
_pdfium_lock = threading.Lock()

# FileReading.verdict
OK = "ok"
ENCRYPTED = "encrypted"
CORRUPT = "corrupt"
TOO_MANY_PAGES = "too_many_pages"
TOO_LARGE = "too_large"
TOO_SLOW = "too_slow"
UNSUPPORTED = "unsupported"
EMPTY = "empty"
READ_FAILURES = {
    ENCRYPTED: "the file is protected by a password",
    CORRUPT: "the file is damaged or not what it claims to be",
    TOO_MANY_PAGES: f"the file has more than {MAX_PAGES} pages",
    TOO_LARGE: "the file is larger than the upload limit",
    TOO_SLOW: f"decoding took more than {MAX_DECODE_SECONDS:g} s",
    UNSUPPORTED: "the file is neither a PDF nor an image",
    EMPTY: "the file is empty",
}


@dataclass(frozen=True, repr=False)
class ReadBarcode:
    text: str
    symbology: str  # "QRCode", "PDF417", "Aztec", "DataMatrix", "Code128"
    page: int  # 1-based; an image is page 1

    @property
    def last4(self) -> str:
        return self.text[-4:]

    def __repr__(self) -> str:
        return f"ReadBarcode(…{self.last4}, {self.symbology}, page={self.page})"


@dataclass
class FileReading:
    kind: str  # "pdf", "image" or "unknown"
    verdict: str = OK
    pages: int = 0  # pages decoded (a file stopped as too slow: the pages done before)
    page_count: int = 0  # pages the file has
    barcodes: list[ReadBarcode] = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # each decoded page's text
    seconds: float = 0.0  # wall-clock
    cpu_seconds: float = 0.0  # what the decoding budget counts

    @property
    def ok(self) -> bool:
        return self.verdict == OK

    @property
    def problem(self) -> str:
        return READ_FAILURES.get(self.verdict, "")


def file_kind(data: bytes) -> str:
    head = data[:1024]
    if PDF_MAGIC in head:
        return "pdf"
    if head.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")) or (
        head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    ):
        return "image"
    return "unknown"


def ticket_file_read(data: bytes, *, max_bytes: int | None = None) -> FileReading:
    """Read ``data`` (a PDF or an image): its barcodes, page by page, and its text. Never raises for the
    file's content; ``verdict`` is ``ok`` or why it could not be read."""
    started = time.perf_counter()
    spent_from = time.thread_time()
    limit = settings.ORDER_PDF_MAX_BYTES if max_bytes is None else max_bytes
    kind = file_kind(data)
    if not data:
        reading = FileReading(kind=kind, verdict=EMPTY)
    elif len(data) > limit:
        reading = FileReading(kind=kind, verdict=TOO_LARGE)
    elif kind == "pdf":
        with _pdfium_lock:
            reading = _pdf_read(data, spent_from)
    elif kind == "image":
        reading = _image_read(data)
    else:
        reading = FileReading(kind=kind, verdict=UNSUPPORTED)
    reading.seconds = time.perf_counter() - started
    reading.cpu_seconds = time.thread_time() - spent_from
    return reading


# --- in a child process -------------------------------------------------------------------------------------
# Every file a seller or a partner gives is read in a child process of its own: an address-space and a CPU
# rlimit, and a kill once ``MAX_DECODE_SECONDS`` of wall time have passed (its reading is then ``too_slow``), so
# no file, however it is built (45,000 stroked lines in 3 KB), holds a worker past the budget, and PDFium's
# one-document-at-a-time lock is never waited on across files.
CHILD_ADDRESS_SPACE_BYTES = 2 * 1024 * 1024 * 1024
CHILD_CPU_SECONDS = int(MAX_DECODE_SECONDS) + 1
_ROOT = Path(__file__).resolve().parents[3]


def ticket_file_read_isolated(data: bytes, *, max_bytes: int | None = None) -> FileReading:
    """``ticket_file_read`` in a child process killed at ``MAX_DECODE_SECONDS`` of wall time. Never raises
    for the file's content: a child killed or crashed gives ``too_slow`` or ``corrupt``."""
    started = time.perf_counter()
    limit = settings.ORDER_PDF_MAX_BYTES if max_bytes is None else max_bytes
    kind = file_kind(data)
    if not data or len(data) > limit or kind == "unknown":
        return ticket_file_read(data, max_bytes=limit)  # decided without decoding anything
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(  # noqa: S603 (this interpreter, this module)
        [sys.executable, "-m", "orders.transfers.reading.barcodes", str(limit)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=str(_ROOT),
        env=env,
    )
    try:
        out, _ = child.communicate(data, timeout=MAX_DECODE_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return FileReading(kind=kind, verdict=TOO_SLOW, seconds=time.perf_counter() - started)
    except BaseException:
        # The task's own time limit (or anything else) cut the wait: the child does not outlive it.
        child.kill()
        child.wait()
        raise
    reading = _reading_loads(out) if child.returncode == 0 else None
    if reading is None:
        # Killed by its CPU rlimit (SIGXCPU) is too slow; out of address space or any other crash is unreadable.
        verdict = TOO_SLOW if child.returncode in (-signal.SIGXCPU, -signal.SIGKILL) else CORRUPT
        reading = FileReading(kind=kind, verdict=verdict)
    reading.seconds = time.perf_counter() - started
    return reading


def _reading_dumps(reading: FileReading) -> bytes:
    data = asdict(reading)
    data["barcodes"] = [[b.text, b.symbology, b.page] for b in reading.barcodes]
    return json.dumps(data).encode()


def _reading_loads(out: bytes) -> FileReading | None:
    try:
        data = json.loads(out)
        data["barcodes"] = [ReadBarcode(text=t, symbology=s, page=int(p)) for t, s, p in data["barcodes"]]
        return FileReading(**data)
    except (ValueError, TypeError, KeyError):
        return None


def _child_main(argv: list[str]) -> int:
    """The child: its rlimits first, then the file from stdin, its reading as JSON on stdout."""
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE_BYTES, CHILD_ADDRESS_SPACE_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS + 1))
    data = sys.stdin.buffer.read()
    reading = ticket_file_read(data, max_bytes=int(argv[0]))
    sys.stdout.buffer.write(_reading_dumps(reading))
    sys.stdout.buffer.flush()
    return 0


def decode(image: Image.Image, *, page: int) -> list[ReadBarcode]:
    found = []
    for result in zxingcpp.read_barcodes(image, formats=FORMATS):
        text = result.text or result.bytes.hex()
        if text:
            found.append(ReadBarcode(text=text, symbology=result.format.name, page=page))
    return found


def _pdf_read(data: bytes, spent_from: float) -> FileReading:
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        locked = getattr(exc, "err_code", None) in (
            pdfium_raw.FPDF_ERR_PASSWORD,
            pdfium_raw.FPDF_ERR_SECURITY,
        )
        return FileReading(kind="pdf", verdict=ENCRYPTED if locked else CORRUPT)
    try:
        reading = FileReading(kind="pdf", page_count=len(document))
        if reading.page_count > MAX_PAGES:
            reading.verdict = TOO_MANY_PAGES
            return reading
        if reading.page_count == 0:
            reading.verdict = CORRUPT
            return reading
        for index in range(reading.page_count):
            if _spent(spent_from) > MAX_DECODE_SECONDS:
                reading.verdict = TOO_SLOW
                return reading
            try:
                barcodes, text = _page_read(document, index, spent_from)
            except pdfium.PdfiumError:
                reading.verdict = CORRUPT
                return reading
            reading.barcodes += barcodes
            reading.text.append(text)
            reading.pages += 1
        if _spent(spent_from) > MAX_DECODE_SECONDS:
            reading.verdict = TOO_SLOW
        return reading
    finally:
        document.close()


def _page_read(document, index: int, spent_from: float) -> tuple[list[ReadBarcode], str]:
    page = document[index]
    try:
        width, height = page.get_size()
        ceiling = math.sqrt(MAX_PAGE_PIXELS / max(width * height, 1.0))
        barcodes: list[ReadBarcode] = []
        for scale in RENDER_SCALES:
            if barcodes and _spent(spent_from) > MAX_DECODE_SECONDS:
                break
            bitmap = page.render(scale=min(scale, ceiling), grayscale=True)
            try:
                found = decode(bitmap.to_pil(), page=index + 1)
            finally:
                bitmap.close()
            if len(found) > len(barcodes):
                barcodes = found
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_bounded()
        finally:
            textpage.close()
        return barcodes, text
    finally:
        page.close()


def _spent(spent_from: float) -> float:
    # The budget counts the reading thread's CPU time: a busy machine (other processes, other threads)
    # slows the clock, not the decoding, and must not turn a good file into a "too slow" one.
    return time.thread_time() - spent_from


def _image_read(data: bytes) -> FileReading:
    reading = FileReading(kind="image", page_count=1)
    try:
        with Image.open(io.BytesIO(data), formats=IMAGE_FORMATS) as image:
            if image.width * image.height > MAX_IMAGE_PIXELS:
                reading.verdict = TOO_LARGE
                return reading
            image.load()
            reading.barcodes = decode(_flattened(image), page=1)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        reading.verdict = CORRUPT
        return reading
    reading.pages = 1
    reading.text = [""]
    return reading


def _flattened(image: Image.Image) -> Image.Image:
    """Grayscale or RGB; a transparent background becomes white (a QR code saved on transparency)."""
    if image.mode in ("L", "RGB"):
        return image
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
