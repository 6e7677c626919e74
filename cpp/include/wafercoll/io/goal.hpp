// GOAL, the schedule language of LogGOPSim (Hoefler, Schneider, Lumsdaine,
// "LogGOPSim - Simulating Large-Scale Applications in the LogGOPS Model",
// HPDC 2010; spcl/LogGOPSim, grammar of src/LogGOPSim/txt2bin.re): read a
// file into the messages of a schedule.
//
//   num_ranks 2                       a header, then one block per rank:
//   rank 0 {
//     l1: send 1024b to 1 tag 7       send SIZEb to PEER tag TAG [cpu N] [nic N]
//     l2: calc 500                    recv SIZEb from PEER tag TAG [cpu N] [nic N]
//     l2 requires l1                  lA requires lB / lA irequires lB
//   }                                 comments: // to the end of the line, /* */
//   rank 1 {
//     l1: recv 1024b from 0 tag 7
//   }
//
// Three stages, each a function:
//
//   bytes --decode_goal_bytes--> UTF-8 text --parse_goal--> GoalProgram
//         --match_goal--> GoalMessages (one transfer per message, with deps)
//
// Matching follows LogGOPSim: the k-th send from x to y with tag g meets the
// k-th receive at y from x with tag g, in file order. Operations are then
// taken in a topological order of "requires" edges and message edges
// (smallest operation index first, so the result does not depend on hash
// order), and every message becomes one transfer, numbered in that order,
// that depends on the transfers completed by what its send and its receive
// wait for (a send completes when it may start: it waits for nothing more).
//
// The reader is the compiled twin of wafercoll's former Python reader, kept
// as the reference in tests/goal_reference.py: the same transfers in the same
// order, the same dependencies, and for a malformed input the same error,
// with the same message, line and element. Where that reader was accidental
// these rules hold, in both: numbers are ASCII digits (as in LogGOPSim's
// grammar), a size or tag must fit in 64 bits (LogGOPSim keeps 64-bit sizes
// and 32-bit tags), and of several unmatched keys the first in rank order is
// reported.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "wafercoll/units.hpp"

namespace wafercoll {

// A malformed GOAL input. what() is the message without the file name (the
// caller adds it); element() is the statement kind at fault ("statement",
// "rank", "send", ...; empty when none applies) and line() its 1-based line
// (0 when none applies).
//
// kind() encoding: the bytes are neither UTF-8 nor UTF-16 with a byte-order
// mark; the caller's decoder says exactly where (the core only detects it).
// kind() unexpected_text: text() holds the offending word (UTF-8), which the
// caller quotes as its language would.
class GoalError : public std::invalid_argument {
 public:
  enum class Kind : std::uint8_t { format = 0, encoding = 1, unexpected_text = 2 };

  GoalError(const std::string& message, std::string element, std::int64_t line,
            Kind kind = Kind::format, std::string text = {})
      : std::invalid_argument(message),
        element_(std::move(element)),
        line_(line),
        kind_(kind),
        text_(std::move(text)) {}

  const std::string& element() const { return element_; }
  std::int64_t line() const { return line_; }
  Kind kind() const { return kind_; }
  const std::string& text() const { return text_; }

 private:
  std::string element_;
  std::int64_t line_;
  Kind kind_;
  std::string text_;
};

enum class GoalOpKind : std::uint8_t { send = 0, recv = 1, calc = 2 };

// The operations of a parsed file, rank-major: rank 0's in file order, then
// rank 1's, ... (the order ties are broken in). Struct of arrays.
struct GoalProgram {
  RankId num_ranks = 0;
  std::vector<GoalOpKind> kind;
  std::vector<RankId> rank;
  std::vector<RankId> peer;         // -1 for calc
  std::vector<std::int64_t> size;   // bytes (0 for calc)
  std::vector<std::int64_t> tag;    // -1 for calc
  std::vector<std::int64_t> line;   // 1-based line of the operation
  // Label of operation i: label_text[label_offsets[i] .. label_offsets[i+1]).
  std::vector<std::int64_t> label_offsets{0};
  std::string label_text;
  // "requires" edges in file order: operation req_after[j] waits for
  // req_before[j] (irequires is read the same way: operations start as soon
  // as what they wait for allows).
  std::vector<std::int32_t> req_after;
  std::vector<std::int32_t> req_before;

  std::int64_t num_ops() const { return static_cast<std::int64_t>(kind.size()); }
  std::string_view label(std::int64_t i) const {
    return std::string_view(label_text).substr(
        static_cast<std::size_t>(label_offsets[i]),
        static_cast<std::size_t>(label_offsets[i + 1] - label_offsets[i]));
  }
};

// One transfer per message, in the order of the topological sort.
struct GoalMessages {
  RankId num_ranks = 0;
  std::vector<RankId> src;
  std::vector<RankId> dst;
  std::vector<std::int64_t> tag;
  std::vector<std::int64_t> size;
  // Transfer t waits for deps[dep_offsets[t] .. dep_offsets[t+1]), increasing.
  std::vector<std::int64_t> dep_offsets{0};
  std::vector<TransferId> deps;
  // The operations (rank-major indices) of every transfer's send and
  // receive, and the labels of all operations as in GoalProgram: enough to
  // say where each transfer came from (goal_labels) without making a string
  // per transfer unless asked.
  std::vector<std::int32_t> send_op;
  std::vector<std::int32_t> recv_op;
  std::vector<std::int64_t> label_offsets{0};
  std::string label_text;

  TransferId num_transfers() const { return static_cast<TransferId>(src.size()); }
};

// Largest num_ranks a file may declare.
constexpr std::int64_t kGoalMaxRanks = std::int64_t{1} << 20;

// The text of a GOAL file's bytes: UTF-8 (an optional UTF-8 byte-order mark
// is dropped), or UTF-16 after its byte-order mark, transcoded to UTF-8 into
// storage. Returns a view of bytes or of storage; throws GoalError (encoding)
// for anything else.
std::string_view decode_goal_bytes(std::string_view bytes, std::string& storage);

// Parse UTF-8 text; throws GoalError for the first problem, in the order a
// reader that tokenizes the whole text first, then parses statement after
// statement, then resolves labels, meets them.
GoalProgram parse_goal(std::string_view text);

// Match sends with receives and order everything; throws GoalError for an
// unmatched operation, a size mismatch, a cycle, or a program without messages.
GoalMessages match_goal(const GoalProgram& program);
GoalMessages match_goal(GoalProgram&& program);  // takes the labels over

// "rank S LABEL -> rank D LABEL (tag G)" for every transfer, joined by '\n':
// where each message came from, for error messages and listings.
std::string goal_labels(const GoalMessages& messages);

// The three stages on a file (read whole, in binary) or on text given directly
// (UTF-8, used as it is: no byte-order mark is dropped).
GoalMessages read_goal_file(const std::string& path);
GoalMessages read_goal_text(std::string_view text);

}  // namespace wafercoll
