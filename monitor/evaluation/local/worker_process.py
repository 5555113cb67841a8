"""The local-tier worker process: evaluate turns sent by the serving process, send back Scores.

Started by :class:`monitor.evaluation.local.worker_pool.LocalWorkerPool` as
``python -m monitor.evaluation.local.worker_process``. It speaks length-prefixed pickles on
stdin/stdout (both ends are this package, in processes of one user: pickle is safe here):

1. it reads the evaluators (a pickled tuple), scores a small warm-up turn so model files are
   read before real traffic, and answers ``READY``;
2. then, for each ``(job_id, turn)`` frame, it answers ``(job_id, scores)``, the same Scores
   ``evaluate_turn`` gives in process (an evaluator's exception is an internal-error Score);
3. an empty stdin (the pool closed it, or the serving process died) ends it.

Everything runs inline on one thread: this process does nothing else, so handing work to a
thread (as the serving process does for long inputs) would only add cost. Logging goes to
stderr, which the pool leaves attached to its own; stray prints cannot corrupt the protocol
because stdout is moved to stderr before any evaluator runs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import sys
from typing import TYPE_CHECKING, BinaryIO, Sequence, cast

if TYPE_CHECKING:
    from monitor.interfaces import Evaluator
    from monitor.model import Turn

__all__ = ["READY", "HEADER_BYTES", "write_frame", "read_frame", "serve", "main"]

READY = "ready"
HEADER_BYTES = 8


def write_frame(stream: BinaryIO, value: object) -> None:
    """``value`` pickled, behind its length (8 bytes, big-endian)."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(body).to_bytes(HEADER_BYTES, "big"))
    stream.write(body)
    stream.flush()


def read_frame(stream: BinaryIO) -> object | None:
    """The next value, or None at end of stream."""
    header = stream.read(HEADER_BYTES)
    if len(header) < HEADER_BYTES:
        return None
    size = int.from_bytes(header, "big")
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)


def _warm_up_turn() -> "Turn":
    from monitor.model import Document, Turn

    text = "Warm-up. The refund arrives within five days. It is not waterproof."
    return Turn("0" * 32, "warm-up", text, text, documents=(Document("d", text),), system_prompt=text,
                ground_truth=text)


def serve(evaluators: "Sequence[Evaluator]", inp: BinaryIO, out: BinaryIO) -> None:
    """Answer job frames from ``inp`` on ``out`` until ``inp`` ends."""
    from monitor.evaluation.local.offload import run_inline_here
    from monitor.evaluation.runner import InternalErrors, evaluate_turn

    run_inline_here()
    loop = asyncio.new_event_loop()
    errors = InternalErrors()
    try:
        loop.run_until_complete(evaluate_turn(_warm_up_turn(), evaluators, InternalErrors()))
        write_frame(out, READY)
        while (job := read_frame(inp)) is not None:
            job_id, turn = cast("tuple[int, Turn]", job)
            scores = loop.run_until_complete(evaluate_turn(turn, evaluators, errors))
            write_frame(out, (job_id, scores))
    finally:
        loop.close()


def main() -> int:
    # The protocol owns the real stdout; anything printed from here on lands on stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s local-worker %(name)s: %(message)s")
    inp = sys.stdin.buffer
    evaluators = read_frame(inp)
    if evaluators is None:
        return 0
    try:
        serve(cast("tuple[Evaluator, ...]", evaluators), inp, out)
    except (BrokenPipeError, KeyboardInterrupt):  # the serving process went away or stopped us
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
