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

Import (:func:`read_msccl`) reads the program as the runtime runs it. Every
attribute the runtime reads is required and checked (integers are decimal
digits; offsets plus counts within the ``i_chunks`` / ``o_chunks`` /
``s_chunks`` the GPU declares; a connection, a (peer, channel) pair, has one
sending and one receiving thread block). Steps become the runtime's transfers
as its XML reader builds them: a ``nop`` hands its dependency to the next
step, consecutive ``re`` steps into one chunk without dependencies of their
own are fused into one reduction (a ``nop`` between them hands its dependency
past it), and a wait for a step is released by the first step from there on
with ``hasdep="1"``. Buffers are the runtime's: with ``inplace="1"`` an
allgather's input is the GPU's slice of its output (a reduce-scatter's output
the slice of its input, the other collectives' input and output are one
buffer); out of place the output buffer starts undefined. Each step's reads
and writes of chunks (both operands of ``rrc`` / ``rrcs`` / ``rrs``, which
stores nothing) make an exact verification model, which
:func:`wafercoll.verify` and :func:`wafercoll.execute` use: a message is read
into a relay rank at its send and delivered from there, and a step's reads
wait for a marker of its start, so a write not ordered after the step is a
race. A read of a chunk that holds no data when its step runs (one no step
wrote before, in some order the program allows) is an import error naming the
GPU, thread block and step, and so is an out-of-place output chunk that is
never written. The schedule itself, which :func:`wafercoll.simulate` times,
has one transfer per message with labels naming the GPU, thread block and step
of both ends; its JSON and pickle keep the model.

An ``alltoall`` runs out of place, as msccl-tools writes it (``AllToAll``):
with ``k = nchunksperloop / ngpus``, GPU ``i``'s input chunks ``[j k, (j + 1)
k)`` are its data for GPU ``j``, which receives them in its output chunks
``[i k, (i + 1) k)``. wafercoll gives each (source, target, chunk) a block of
its own, ``(i * ngpus + j) * k + c``, so the import is an ordinary alltoall
schedule (:class:`wafercoll.Schedule`, ``"alltoall"``, with explicit
``owners`` and ``targets``), and the export places each block in its owner's
input, its target's output and the scratch of the ranks that relay it, with
a ``cpy`` of each GPU's own chunks from input to output. The MSCCL runtime has
no alltoallv, gather or scatter, and its alltoall exchanges the same number
of chunks between every pair: other schedules are refused with the reason.
An in-place alltoall (one buffer whose chunks change owner) is refused.

Limits of the import, each refused with a message naming GPU, thread block and
step: a chunk that moves to a different position (wafercoll moves a block to
the same block of another rank), a scratch chunk that holds one block and later
another, ``ra`` steps, fused ``re`` steps with different counts, and a step
whose source and destination chunks overlap without coinciding.

The export lives in :mod:`wafercoll.io.msccl_write`, the import in
:mod:`wafercoll.io.msccl_read` (its XML layer in ``_msccl_parse``); this
module gathers their public names.
"""

from __future__ import annotations

from .msccl_read import read_msccl
from .msccl_write import MSCCL_LIMITS, msccl_xml, write_msccl

__all__ = ["MSCCL_LIMITS", "msccl_xml", "read_msccl", "write_msccl"]
