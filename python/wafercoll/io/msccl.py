"""MSCCL XML: the algorithm format the MSCCL runtime executes on NCCL / RCCL.

A file holds one ``<algo>`` with a ``<gpu>`` per rank, each with thread blocks
``<tb>`` (one send peer, one receive peer, a channel) running ``<step>``
elements in program order. Buffers are counted in *chunks*: ``i`` (input),
``o`` (output) and ``s`` (scratch). Step types: ``s`` send, ``r`` receive,
``rrc`` receive and reduce into a local chunk, ``rcs`` / ``rrcs`` / ``rrs``
receive (and reduce), store (except ``rrs``) and send on, ``re`` / ``cpy``
local reduce / copy, ``nop`` a dependency carrier. A step waits for the step
``deps`` of thread block ``depid`` (``hasdep`` marks steps others wait for).

Sources of the schema and limits: msccl-tools ``msccl/language/ir.py``
(``ir_to_xml``, the writer of msccl-tools, commit 030a750) and the MSCCL
runtime ``src/include/msccl.h`` and its XML parser (microsoft/msccl, commit
b23e9cd): at most ``MSCCL_MAX_NUM_STEPS = 256`` steps per thread block,
``cnt < MSCCL_MAX_COUNT = 72`` chunks per step, thread-block ids contiguous
from 0, at most 32 thread blocks per channel and ``MAXCHANNELS = 32`` channels,
16-bit chunk offsets.

Export (:func:`write_msccl`) maps each block of a verified schedule onto whole
chunks (the chunk is the greatest common divisor of the block sizes), gives
every rank one thread block per peer (send and receive peer both that peer),
turns each transfer into a ``s`` step at the source and an ``r`` (copy) or
``rrc`` (reduce) step at each destination, and orders steps by the accesses
they conflict on (a step waits for the last write of each chunk it touches,
and a write for the reads since). When a destination's block is read by a
transfer that runs concurrently with the write (a pairwise exchange in one
step), the receive goes to the scratch buffer and a ``re`` / ``cpy`` step
applies it once the concurrent send has left. Steps are ordered in every
thread block by one global order in which each send is followed by its
receive, so the program cannot deadlock, even with unbuffered sends. A step
with several dependencies gets ``nop`` steps in front of it, one per extra
dependency.

Import (:func:`read_msccl`) replays the program: messages are matched per
connection (sender, receiver, channel) in order, and every message becomes a
transfer that waits for what the send step and the receive step (or, for a
receive into scratch, the ``re`` / ``cpy`` step that consumes it) wait for:
the schedule :func:`wafercoll.simulate` times. An MSCCL message is read at
its send and written at its receive, later; one wafercoll transfer reads and
writes after one set of dependencies. So the imported schedule carries an
exact verification model, which :func:`wafercoll.verify` and
:func:`wafercoll.execute` use: each message passes through a relay rank of its
own (a non-participant), read when the send step may run and delivered when
the receiving steps may. Labels name the GPU, thread block and step of both
ends, and :func:`wafercoll.verify` quotes them. The JSON of an imported
schedule keeps the timing view only.

Limits of the import, each refused with a message naming GPU, thread block and
step: a chunk that moves to a different position (wafercoll moves a block to
the same block of another rank), a send from scratch, scratch-to-scratch
``re`` / ``cpy``, ``ra`` steps, and a scratch chunk consumed without a
dependency on the receive that fills it. Input and output buffers are one
vector (exact for in-place programs; an out-of-place program must not read an
input chunk after writing the output chunk at its position). ``rrs`` (reduce
and send without storing) is read as ``rrcs``: the relay keeps the partial
sum, which a correct program overwrites.

The export lives in :mod:`wafercoll.io.msccl_write`, the import in
:mod:`wafercoll.io.msccl_read` (its XML layer in ``_msccl_parse``); this
module gathers their public names.
"""

from __future__ import annotations

from .msccl_read import read_msccl
from .msccl_write import MSCCL_LIMITS, msccl_xml, write_msccl

__all__ = ["MSCCL_LIMITS", "msccl_xml", "read_msccl", "write_msccl"]
