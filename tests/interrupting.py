"""Ctrl-C from a test: start a command, wait until its long work runs, send SIGINT.

The command runs in a session of its own, so that everything it starts
(worker processes, fork servers) shares its process group: after the
command has exited, the group must empty quickly, or a worker outlived the
interrupt. SIGINT goes to the command's process only (as when a batch system
or a parent script interrupts it; the workers do not see it) unless
``group=True`` (as a terminal's Ctrl-C, which reaches the whole group).

The time measured is from SIGINT to the command's exit. The promise is 1 s;
:data:`BUDGET_S` adds a margin for the interpreter's own teardown (freeing
NumPy, matplotlib and the compiled core) on a loaded two-core CI machine.
The work itself must stop at once: the commands under test would otherwise
run for a minute or more.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: The promise: the work stops within a second of Ctrl-C.
PROMISE_S = 1.0
#: Allowance for the interpreter's teardown after the work stopped.
TEARDOWN_MARGIN_S = 2.0
BUDGET_S = PROMISE_S + TEARDOWN_MARGIN_S


@dataclass
class Interrupted:
    returncode: int | None
    seconds: float  # from SIGINT to the command's exit
    stdout: str
    stderr: str
    leftover: bool  # a process of the command's group outlived it


def interrupt(
    cmd: Sequence[str],
    ready: Callable[[str], bool],
    *,
    settle_s: float = 0.3,
    group: bool = False,
    start_timeout_s: float = 120.0,
    **popen: object,
) -> Interrupted:
    """Run ``cmd``; once ``ready(stderr so far)`` holds, wait ``settle_s``, SIGINT.

    Fails (``AssertionError``) when the command ends before it is ready.
    """
    proc = subprocess.Popen(
        list(cmd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        **popen,  # type: ignore[arg-type]
    )
    out: list[bytes] = []
    err: list[bytes] = []

    def pump(stream, sink) -> None:
        for chunk in iter(lambda: stream.read1(4096), b""):
            sink.append(chunk)

    readers = [
        threading.Thread(target=pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, err), daemon=True),
    ]
    for t in readers:
        t.start()

    def text(chunks: list[bytes]) -> str:
        return b"".join(chunks).decode(errors="replace")

    try:
        deadline = time.monotonic() + start_timeout_s
        while not ready(text(err)):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"the command never got ready (exit {proc.poll()}):\n{text(err)}"
                )
            time.sleep(0.02)
        time.sleep(settle_s)
        assert proc.poll() is None, f"the command ended before SIGINT:\n{text(err)}"
        sent = time.monotonic()
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=BUDGET_S + 20)
        except subprocess.TimeoutExpired:
            pass
        seconds = time.monotonic() - sent
        # The group (workers, fork servers) must empty soon after.
        leftover = True
        until = time.monotonic() + 5.0
        while time.monotonic() < until:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                leftover = False
                break
            time.sleep(0.05)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        for t in readers:
            t.join(5.0)
        proc.stdout.close()
        proc.stderr.close()
    return Interrupted(proc.returncode, seconds, text(out), text(err), leftover)
