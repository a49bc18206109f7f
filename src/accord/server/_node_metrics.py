"""How the processes of one node (``accord serve --processes N``) hand each other their metric
families, so that a scrape of ``/metrics`` answered by any of them answers for the node.

The supervisor makes a private directory (mode 0700) and names it to its children
(``ACCORD_METRICS_DIR``). Process *k* listens on ``<dir>/<k>.sock``: whoever connects gets
its in-memory families (:func:`accord.telemetry.encode_families`), then the end of the
stream. The process answering a scrape asks each sibling at once, within ``timeout_s`` in
all and ``max_bytes`` each; a sibling that does not answer in time, refuses (dead, or not
started yet: its socket file may be a dead process's), or sends what does not decode, is
left out of that scrape — the scrape never fails for it — and logged, at most once a
minute per sibling. The merge itself is :func:`accord.telemetry.merge`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from accord.telemetry import Family, decode_families

log = logging.getLogger("accord.telemetry")

TIMEOUT_S = 1.0  # for every sibling's answer, in all
MAX_BYTES = 16 * 1024 * 1024  # one sibling's families, encoded
LOG_EVERY_S = 60.0  # a sibling that does not answer: said at most this often


class NodeMetrics:
    """Process ``index`` of ``processes``, its siblings' sockets in ``directory``."""

    def __init__(
        self,
        directory: str | Path,
        index: int,
        processes: int,
        *,
        timeout_s: float = TIMEOUT_S,
        max_bytes: int = MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = Path(directory)
        self.index = index
        self.processes = processes
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.clock = clock
        self._said: dict[int, float] = {}  # sibling -> when its silence was last logged

    def path(self, index: int) -> Path:
        return self.directory / f"{index}.sock"

    @property
    def siblings(self) -> list[int]:
        return [k for k in range(1, self.processes + 1) if k != self.index]

    async def serve(self, payload: Callable[[], bytes]) -> None:
        """Answer every connection to this process's socket with ``payload()``, until
        cancelled (then the socket file is removed). A socket that cannot be made is logged:
        the process serves on, and its siblings' scrapes leave it out."""
        path = self.path(self.index)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a socket left by the process this one replaces
        try:
            server = await asyncio.start_unix_server(_answer(payload), str(path))
        except OSError as exc:
            log.warning("metrics: cannot listen on %s for this node's scrapes: %s", path, exc)
            return
        try:
            await server.serve_forever()
        finally:
            server.close()
            with contextlib.suppress(OSError):
                path.unlink()

    async def ask(self) -> list[tuple[int, list[Family]]]:
        """The families of every sibling that answered, by its number."""
        answers = await asyncio.gather(*(self._ask(k) for k in self.siblings))
        return [answer for answer in answers if answer is not None]

    async def _ask(self, index: int) -> tuple[int, list[Family]] | None:
        try:
            async with asyncio.timeout(self.timeout_s):
                data = await self._read(self.path(index))
            return index, decode_families(data)
        except (OSError, TimeoutError, ValueError) as exc:  # DecodeError is a ValueError
            self._unanswered(index, exc)
            return None

    async def _read(self, path: Path) -> bytes:
        reader, writer = await asyncio.open_unix_connection(str(path))
        try:
            chunks: list[bytes] = []
            size = 0
            while chunk := await reader.read(65536):
                size += len(chunk)
                if size > self.max_bytes:
                    raise ValueError(f"more than {self.max_bytes} bytes")
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            writer.close()

    def _unanswered(self, index: int, exc: BaseException) -> None:
        now = self.clock()
        said = self._said.get(index)
        if said is not None and now - said < LOG_EVERY_S:
            return
        self._said[index] = now
        why = str(exc) or type(exc).__name__
        log.warning(
            "metrics: process %d did not answer (%s): left out of this scrape "
            "(said at most once a minute)",
            index,
            why,
        )


def _answer(
    payload: Callable[[], bytes],
) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    async def answer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(payload())
            await writer.drain()
        except OSError:
            pass  # the asking process went away: nothing to tell it
        except Exception:  # its sibling's scrape leaves this process out (it cannot decode)
            log.warning("metrics: collecting this process's families failed", exc_info=True)
        finally:
            writer.close()

    return answer
