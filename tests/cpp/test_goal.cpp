// GOAL reader: decoding, tokenizer and parser, matching, order, dependencies,
// and the errors with their lines and elements. Expected values are worked
// out by hand from the small programs below.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "wafercoll/io/goal.hpp"

using namespace wafercoll;

namespace {

// The error parse_goal / match_goal raise for text, as "line L <element>: message".
std::string error_of(const std::string& text) {
  try {
    read_goal_text(text);
  } catch (const GoalError& e) {
    return "line " + std::to_string(e.line()) + " <" + e.element() + ">: " + e.what();
  }
  return "no error";
}

std::vector<std::vector<TransferId>> deps_of(const GoalMessages& m) {
  std::vector<std::vector<TransferId>> out;
  for (TransferId t = 0; t < m.num_transfers(); ++t) {
    out.emplace_back(m.deps.begin() + m.dep_offsets[t], m.deps.begin() + m.dep_offsets[t + 1]);
  }
  return out;
}

// A ring of three ranks: 0 -> 1 -> 2 -> 0, each send after its receive.
const char* kRing =
    "num_ranks 3\n"
    "rank 0 {\n"
    "a: send 8b to 1 tag 0\n"
    "b: recv 8b from 2 tag 0\n"
    "}\n"
    "rank 1 {\n"
    "a: recv 8b from 0 tag 0\n"
    "b: send 8b to 2 tag 0\n"
    "b requires a\n"
    "}\n"
    "rank 2 {\n"
    "b requires a\n"  // before the labels it names
    "a: recv 8b from 1 tag 0\n"
    "b: send 8b to 0 tag 0\n"
    "}\n";

}  // namespace

TEST(Goal, ParsesOperationsRankMajor) {
  // rank 1's block first in the file: rank 0's operations still come first
  const GoalProgram g = parse_goal(
      "// header comment\n"
      "num_ranks 2\n"
      "rank 1 {\n"
      "x1: recv 16b from 0 tag 3 cpu 0 nic 1\n"
      "}\n"
      "rank 0 {\n"
      "  y: send 0016b to 1 tag -0\t// leading zeros, -0\n"
      "  z: calc 99999999999999999999999\n"  // any integer: calc takes no time
      "  z irequires y\n"
      "}\n");
  ASSERT_EQ(g.num_ops(), 3);
  EXPECT_EQ(g.num_ranks, 2);
  EXPECT_EQ(g.rank, (std::vector<RankId>{0, 0, 1}));
  EXPECT_EQ(g.kind[0], GoalOpKind::send);
  EXPECT_EQ(g.kind[1], GoalOpKind::calc);
  EXPECT_EQ(g.kind[2], GoalOpKind::recv);
  EXPECT_EQ(g.label(0), "y");
  EXPECT_EQ(g.label(1), "z");
  EXPECT_EQ(g.label(2), "x1");
  EXPECT_EQ(g.size, (std::vector<std::int64_t>{16, 0, 16}));
  EXPECT_EQ(g.tag, (std::vector<std::int64_t>{0, -1, 3}));
  EXPECT_EQ(g.peer, (std::vector<RankId>{1, -1, 0}));
  EXPECT_EQ(g.line, (std::vector<std::int64_t>{7, 8, 4}));
  EXPECT_EQ(g.req_after, (std::vector<std::int32_t>{1}));
  EXPECT_EQ(g.req_before, (std::vector<std::int32_t>{0}));
}

TEST(Goal, CommentsAndBracesKeepLineNumbers) {
  // a block comment over two lines; "rank 0 {" with the brace ending it
  const GoalProgram g = parse_goal(
      "num_ranks 2 /* one\n two */\nrank 0 {\na: send 1b to 1 tag 0\n}\nrank 1 {\n"
      "b: recv 1b from 0 tag 0\n}\n");
  EXPECT_EQ(g.line, (std::vector<std::int64_t>{4, 7}));
  // "}" after an operation belongs to its statement (calc ignores the rest),
  // so the block is still open at the end
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: calc 1 }\n"),
            "line 3 <rank>: rank 0: missing '}' at the end of the file");
}

TEST(Goal, RingMatchesInOrderWithChainedDependencies) {
  const GoalMessages m = read_goal_text(kRing);
  ASSERT_EQ(m.num_transfers(), 3);
  EXPECT_EQ(m.src, (std::vector<RankId>{0, 1, 2}));
  EXPECT_EQ(m.dst, (std::vector<RankId>{1, 2, 0}));
  // 1 -> 2 waits for 0 -> 1 (its send requires that receive), and so on
  EXPECT_EQ(deps_of(m), (std::vector<std::vector<TransferId>>{{}, {0}, {1}}));
  EXPECT_EQ(goal_labels(m),
            "rank 0 a -> rank 1 a (tag 0)\nrank 1 b -> rank 2 a (tag 0)\n"
            "rank 2 b -> rank 0 b (tag 0)");
  // operations rank-major: rank 0's a, b are 0, 1; rank 1's 2, 3; rank 2's 4, 5
  EXPECT_EQ(m.send_op, (std::vector<std::int32_t>{0, 3, 5}));
  EXPECT_EQ(m.recv_op, (std::vector<std::int32_t>{2, 4, 1}));
  GoalMessages bad = m;
  bad.send_op[0] = 6;  // no such operation
  EXPECT_THROW(goal_labels(bad), std::invalid_argument);
}

TEST(Goal, SmallestReadyOperationFirst) {
  const GoalMessages m = read_goal_text(
      "num_ranks 2\n"
      "rank 0 {\ns1: send 1b to 1 tag 5\ns2: send 2b to 1 tag 5\nr: recv 3b from 1 tag 6\n"
      "s2 requires r\n}\n"
      "rank 1 {\nr1: recv 1b from 0 tag 5\nr2: recv 2b from 0 tag 5\ns: send 3b to 0 tag 6\n"
      "}\n");
  // operations: 0 s1, 1 s2 (after r), 2 r, 3 r1, 4 r2, 5 s. Ready at first:
  // s1, s (r needs s, s2 needs r). Taken: s1, r1 (transfer 0), s, r
  // (transfer 1), s2, r2 (transfer 2).
  EXPECT_EQ(m.src, (std::vector<RankId>{0, 1, 0}));
  EXPECT_EQ(m.size, (std::vector<std::int64_t>{1, 3, 2}));
  EXPECT_EQ(m.tag, (std::vector<std::int64_t>{5, 6, 5}));
  // s2 waits for r, which completes transfer 1
  EXPECT_EQ(deps_of(m), (std::vector<std::vector<TransferId>>{{}, {}, {1}}));
}

TEST(Goal, SendsAndCalcsPassOnWhatTheyWaitFor) {
  // rank 1 receives twice, computes, then sends: the send waits for both
  // receives through the calc; rank 0's second send requires its first
  // send, which waits for nothing, so the second message waits for nothing.
  const GoalMessages m = read_goal_text(
      "num_ranks 3\n"
      "rank 0 {\na: send 4b to 1 tag 0\nb: send 4b to 1 tag 1\nb requires a\n}\n"
      "rank 2 {\nc: send 4b to 1 tag 0\nd: recv 4b from 1 tag 0\n}\n"
      "rank 1 {\nr0: recv 4b from 0 tag 0\nr1: recv 4b from 0 tag 1\n"
      "r2: recv 4b from 2 tag 0\nx: calc 10\nx requires r0\nx requires r2\n"
      "s: send 4b to 2 tag 0\ns requires x\n}\n");
  // order: a, b, (rank 1) r0 -> t0, r1 -> t1, then c (rank 2) ... r2 -> t2,
  // x, s, d -> t3
  ASSERT_EQ(m.num_transfers(), 4);
  EXPECT_EQ(m.src, (std::vector<RankId>{0, 0, 2, 1}));
  EXPECT_EQ(m.dst, (std::vector<RankId>{1, 1, 1, 2}));
  EXPECT_EQ(deps_of(m), (std::vector<std::vector<TransferId>>{{}, {}, {}, {0, 2}}));
}

TEST(Goal, DecodesUtf16AndDropsByteOrderMarks) {
  const std::string text = kRing;
  std::string le = "\xFF\xFE", be = "\xFE\xFF";
  for (char c : text) {
    le += c;
    le += '\0';
    be += '\0';
    be += c;
  }
  std::string storage;
  EXPECT_EQ(decode_goal_bytes(le, storage), text);
  EXPECT_EQ(decode_goal_bytes(be, storage), text);
  EXPECT_EQ(decode_goal_bytes("\xEF\xBB\xBF" + text, storage), text);
  // a surrogate pair (U+1F600) becomes four UTF-8 bytes
  EXPECT_EQ(decode_goal_bytes(std::string("\xFF\xFE\x3D\xD8\x00\xDE", 6), storage),
            "\xF0\x9F\x98\x80");
  const auto bad = [&](const std::string& bytes) {
    try {
      decode_goal_bytes(bytes, storage);
    } catch (const GoalError& e) {
      return e.kind() == GoalError::Kind::encoding;
    }
    return false;
  };
  EXPECT_TRUE(bad("\xFF\xFE" "a"));                             // odd length
  EXPECT_TRUE(bad(std::string("\xFF\xFE\x00\xDC", 4)));         // lone low surrogate
  EXPECT_TRUE(bad(std::string("\xFF\xFE\x00\xD8\x41\x00", 6)));  // high, then no low
  EXPECT_TRUE(bad("num_ranks 2\n\xC0\xAF"));                    // overlong '/'
  EXPECT_TRUE(bad("\xED\xA0\x80"));                             // encoded surrogate
  EXPECT_TRUE(bad("\xF4\x90\x80\x80"));                         // above U+10FFFF
  EXPECT_TRUE(bad("abc\xE2\x82"));                              // cut short
  EXPECT_FALSE(bad("// r\xC3\xA9seau \xE2\x82\xAC \xF0\x9F\x98\x80\n"));
}

TEST(Goal, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "wafercoll_ring.goal";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs(kRing, f);
  std::fclose(f);
  EXPECT_EQ(goal_labels(read_goal_file(path)), goal_labels(read_goal_text(kRing)));
  std::remove(path.c_str());
  EXPECT_THROW(read_goal_file(path), std::invalid_argument);
}

TEST(Goal, ParseErrorsNameLineAndElement) {
  EXPECT_EQ(error_of(""), "line 1 <num_ranks>: a GOAL file starts with 'num_ranks N'");
  EXPECT_EQ(error_of("\n\nrank 0 {\n"),
            "line 3 <num_ranks>: a GOAL file starts with 'num_ranks N'");
  EXPECT_EQ(error_of("num_ranks 1048577\n"),
            "line 1 <num_ranks>: num_ranks must be in [1, 1048576], got 1048577");
  EXPECT_EQ(error_of("num_ranks -000\n"),
            "line 1 <num_ranks>: num_ranks must be in [1, 1048576], got 0");
  EXPECT_EQ(error_of("num_ranks 2\nrank 2 {\n"), "line 2 <rank>: rank 2 is outside [0, 1]");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\n}\nrank 0 {\n}\n"),
            "line 4 <rank>: rank 0 appears twice");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\nrank 1 {\n"),
            "line 3 <rank>: 'rank' inside a rank block (missing '}')");
  EXPECT_EQ(error_of("num_ranks 2\n}\n"), "line 2 <rank>: '}' without a rank block");
  EXPECT_EQ(error_of("num_ranks 2\na: calc 1\n"),
            "line 2 <statement>: 'a: calc 1' outside a rank block");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na calc 1\n"),
            "line 3 <statement>: expected 'label: operation' or 'lA requires lB', got "
            "'a calc 1'");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: calc 1\na: calc 2\n"),
            "line 4 <statement>: label 'a' is defined twice in rank 0");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na:\n"), "line 3 <statement>: a: missing operation");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: calc\n"), "line 3 <calc>: expected 'calc TIME'");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: sned 1b to 1 tag 0\n"),
            "line 3 <statement>: unknown operation 'sned' (send, recv or calc)");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: send 1b 1 tag 0\n"),
            "line 3 <send>: expected 'send SIZEb to PEER tag TAG'");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: recv 1b from 1 tag 0 cpu\n"),
            "line 3 <recv>: unexpected 'cpu' after the recv");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: recv 1b from 1 tag 0 nic x\n"),
            "line 3 <statement>: nic must be an integer, got 'x'");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: send 1 to 1 tag 5b\n"),
            "line 3 <statement>: tag must be an integer, got '5b'");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: send 1 to -1 tag 0\n"),
            "line 3 <send>: send with any-source / any-tag (-1) is not supported: the "
            "match would depend on timing");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: send 1 to 0 tag 0\n"),
            "line 3 <send>: peer 0 must be another rank in [0, 1]");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: send 18446744073709551616b to 1 tag 0\n"),
            "line 3 <send>: size must fit in 64 bits, got 18446744073709551616");
}

TEST(Goal, TokenizerErrorsComeFirstAndQuoteAWord) {
  // a parse error on line 2, an unreadable token on line 4: the token wins
  try {
    read_goal_text("num_ranks 2\nrank 9 {\n}\n  \xC3\xA9t\xC3\xA9 x\n");
    FAIL();
  } catch (const GoalError& e) {
    EXPECT_EQ(e.kind(), GoalError::Kind::unexpected_text);
    EXPECT_EQ(e.line(), 4);
    EXPECT_EQ(e.text(), "\xC3\xA9t\xC3\xA9");
  }
  // an unterminated block comment is text nobody reads; at most 20 characters
  try {
    read_goal_text("num_ranks 2\n/* never closed 0123456789abcdef\n");
    FAIL();
  } catch (const GoalError& e) {
    EXPECT_EQ(e.text(), "/*");
  }
  try {
    read_goal_text("num_ranks 2\n%%%%%%%%%%%%%%%%%%%%%%%%%\n");
    FAIL();
  } catch (const GoalError& e) {
    EXPECT_EQ(e.text(), std::string(20, '%'));
  }
  // form feed, then ideographic space, then a word: Python's split skips both
  try {
    read_goal_text("num_ranks 2\n\x0c\xE3\x80\x80word\n");
    FAIL();
  } catch (const GoalError& e) {
    EXPECT_EQ(e.text(), "word");
  }
}

TEST(Goal, LabelErrorsAreReportedInRankOrderAfterParsing) {
  // rank 1's block comes first in the file, but rank 0's error is told
  EXPECT_EQ(error_of("num_ranks 2\nrank 1 {\na requires b\n}\nrank 0 {\nc requires d\n}\n"),
            "line 6 <requires>: rank 0: label 'c' is not defined");
  // a missing '}' comes before any label error
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na requires b\n"),
            "line 3 <rank>: rank 0: missing '}' at the end of the file");
}

TEST(Goal, MatchErrors) {
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: send 8b to 1 tag 0\n}\n"
                     "rank 1 {\nb: recv 8b from 0 tag 1\n}\n"),
            "line 3 <send>: rank 0 a (send) has no match: rank 0 sends 1 messages with tag "
            "0 to rank 1, which receives 0");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: send 8b to 1 tag 0\n}\n"
                     "rank 1 {\nb: recv 9b from 0 tag 0\n}\n"),
            "line 6 <recv>: rank 0 a sends 8 bytes; the matching receive, rank 1 b, takes 9");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: send 8b to 1 tag 0\nb: recv 8b from 1 tag 0\n"
                     "a requires b\n}\nrank 1 {\nc: send 8b to 0 tag 0\nd: recv 8b from 0 tag "
                     "0\nc requires d\n}\n"),
            "line 3 <send>: rank 0 a waits for itself through requires and messages (the "
            "schedule would deadlock)");
  EXPECT_EQ(error_of("num_ranks 2\nrank 0 {\na: calc 5\n}\n"),
            "line 0 <>: the GOAL input has no messages");
  EXPECT_EQ(error_of("num_ranks 1\n"), "line 0 <>: the GOAL input has no messages");
}

TEST(Goal, ManyMessagesIntoOneRankMatchPerSourceAndTagInOrder) {
  // Ranks 1..199 each send rank 0 three messages: tags 0, 1, 0, of sizes
  // 10 s, 10 s + 1, 10 s + 2 (s the source). Rank 0 posts its receives
  // sources last to first, tag 1 before the two tag-0 ones; the k-th
  // receive of (s, tag) meets the k-th send of (s, tag), so sizes must
  // agree pair by pair or the file is refused.
  const int p = 200;
  std::string text = "num_ranks " + std::to_string(p) + "\n";
  for (int s = 1; s < p; ++s) {
    text += "rank " + std::to_string(s) + " {\n";
    for (int k = 0; k < 3; ++k) {
      text += "s" + std::to_string(k) + ": send " + std::to_string(10 * s + k) + "b to 0 tag " +
              std::to_string(k % 2) + "\n";
    }
    text += "}\n";
  }
  text += "rank 0 {\n";
  for (int s = p - 1; s >= 1; --s) {
    const std::string src = std::to_string(s);
    text += "a" + src + ": recv " + std::to_string(10 * s + 1) + "b from " + src + " tag 1\n";
    text += "b" + src + ": recv " + std::to_string(10 * s) + "b from " + src + " tag 0\n";
    text += "c" + src + ": recv " + std::to_string(10 * s + 2) + "b from " + src + " tag 0\n";
  }
  text += "}\n";
  const GoalMessages m = read_goal_text(text);
  ASSERT_EQ(m.num_transfers(), 3 * (p - 1));
  // Only the sends are ready at first; the smallest (rank 1's first) makes
  // its receive ready, which has a smaller index than any send and goes
  // next: transfers follow the sends, source by source.
  for (int k = 0; k < 3 * (p - 1); ++k) {
    EXPECT_EQ(m.src[k], 1 + k / 3);
    EXPECT_EQ(m.size[k], 10 * (1 + k / 3) + k % 3);
  }
  // Swap two sizes of rank 7's tag-0 receives: the pair no longer agrees.
  const std::string bad_recv = "b7: recv 70b from 7 tag 0";
  std::string bad = text;
  bad.replace(bad.find(bad_recv), bad_recv.size(), "b7: recv 72b from 7 tag 0");
  EXPECT_NE(error_of(bad).find("rank 7 s0 sends 70 bytes; the matching receive, rank 0 b7, "
                               "takes 72"),
            std::string::npos)
      << error_of(bad);
}
