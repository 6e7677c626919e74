// How a message is cut into packets and how a packet moves from stage to
// stage, shared by the simulator's engines (simulation.hpp's event loop and
// routers.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "wafercoll/units.hpp"

namespace wafercoll {

// Packets of a message of S bytes cut into packets of M bytes: one when M is
// 0 (messages are not cut) or the message is empty.
constexpr std::int64_t packet_count(Bytes S, Bytes M) {
  return (M == 0 || S == 0) ? 1 : (S + M - 1) / M;
}

// Bytes of the last of its n packets: padded (`pad`), every packet is M
// bytes on the wire (fixed-size messages, as in BookSim).
constexpr Bytes last_packet_bytes(Bytes S, Bytes M, std::int64_t n, bool pad) {
  return (M == 0 || S == 0) ? S : pad ? M : S - (n - 1) * M;
}

// Bytes a packet of m bytes puts on the wire: whole flits of F bytes (F > 0),
// else m.
constexpr Bytes wire_bytes(Bytes m, Bytes F) { return F > 0 ? (m + F - 1) / F * F : m; }

// Cut-through: a packet of `wire` bytes whose head left a stage (inv_bw
// seconds per byte, `latency` to the next) at head_left and whose service
// there ends at `end` reaches the next stage (ibn seconds per byte): its head
// flit (F bytes; none for F = 0) at `head`, and its service there may start
// at the returned time, so that it ends no earlier than its tail arrives.
inline Seconds cut_through_arrival(Seconds head_left, Seconds end, Bytes wire, double inv_bw,
                                   double ibn, Seconds latency, Bytes F, Seconds& head) {
  head = head_left + latency + (F > 0 ? static_cast<double>(F) * inv_bw : 0.0);
  return std::max(head, end + latency - static_cast<double>(wire) * ibn);
}

}  // namespace wafercoll
