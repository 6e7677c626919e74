// GOAL text to a GoalProgram: a tokenizer and a statement parser in one pass.
//
// Tokens (after spaces, tabs and carriage returns):
//   comment  // ... (to the end of the line)   /* ... */ (may span lines)
//   word     [A-Za-z_][A-Za-z0-9_]*:?          (a trailing ':' makes a label)
//   number   -?[0-9]+b?                         (the 'b' only for sizes)
//   brace    { or }
//   newline
// A statement is a line's tokens; a brace ends the statement it closes (so
// "rank 3 {" is one statement, and "}" alone another).
//
// Errors come in the order of a reader that tokenizes the whole text before
// it parses anything: an unreadable token anywhere wins over a parse error
// earlier in the file. So the first parse error is kept and the text is still
// tokenized to its end; then labels that "requires" names are resolved, rank
// by rank.
#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>

#include "wafercoll/errors.hpp"
#include "wafercoll/io/goal.hpp"

namespace wafercoll {

namespace {

struct Token {
  std::string_view text;
  std::int64_t line;
};

// The tokens of one statement. A statement rarely holds more than a dozen
// tokens; the buffer only grows, so pushing is a store and an increment.
class TokenList {
 public:
  void push(std::string_view text, std::int64_t line) {
    if (n_ == buf_.size()) buf_.resize(2 * buf_.size() + 16);
    buf_[n_++] = Token{text, line};
  }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  void clear() { n_ = 0; }
  const Token* data() const { return buf_.data(); }
  const Token& operator[](std::size_t i) const { return buf_[i]; }

 private:
  std::vector<Token> buf_;
  std::size_t n_ = 0;
};

std::string quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  out += s;
  out += '\'';
  return out;
}

std::string join(const Token* begin, const Token* end) {
  std::string out;
  for (const Token* t = begin; t != end; ++t) {
    if (t != begin) out += ' ';
    out += t->text;
  }
  return out;
}

// Character classes of the tokenizer, one table lookup each.
enum : std::uint8_t { kAlpha = 1, kDigit = 2, kBlank = 4 };
struct CharClasses {
  std::uint8_t of[256] = {};
  constexpr CharClasses() {
    for (int c = 'A'; c <= 'Z'; ++c) of[c] = kAlpha;
    for (int c = 'a'; c <= 'z'; ++c) of[c] = kAlpha;
    of[static_cast<int>('_')] = kAlpha;
    for (int c = '0'; c <= '9'; ++c) of[c] = kDigit;
    of[static_cast<int>(' ')] = of[static_cast<int>('\t')] = of[static_cast<int>('\r')] = kBlank;
  }
};
constexpr CharClasses kClasses;
std::uint8_t char_class(char c) { return kClasses.of[static_cast<unsigned char>(c)]; }
bool is_alpha(char c) { return char_class(c) == kAlpha; }
bool is_digit(char c) { return char_class(c) == kDigit; }
bool is_word_char(char c) { return (char_class(c) & (kAlpha | kDigit)) != 0; }

// Whitespace as Python's str.split() knows it (str.isspace: Unicode White_Space
// and the ASCII separators U+001C..U+001F), for quoting the unexpected word.
bool is_space(std::uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

// The code point at s[i] and its length in bytes (the text is UTF-8, or, for
// text handed over directly, UTF-8 with encoded lone surrogates).
std::uint32_t code_point(std::string_view s, std::size_t i, std::size_t& len) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::uint32_t cp = c;
  len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (len > 1) cp &= (0x7Fu >> len);
  len = std::min(len, s.size() - i);
  for (std::size_t k = 1; k < len; ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  }
  return cp;
}

// The first whitespace-separated word of rest, at most 20 code points (all of
// rest's first 20 when it is whitespace only).
std::string unexpected_word(std::string_view rest) {
  std::size_t i = 0, len = 0;
  while (i < rest.size() && is_space(code_point(rest, i, len))) i += len;
  const bool word = i < rest.size();
  if (!word) i = 0;
  const std::size_t start = i;
  for (int count = 0; count < 20 && i < rest.size(); ++count) {
    const std::uint32_t cp = code_point(rest, i, len);
    if (word && is_space(cp)) break;
    i += len;
  }
  return std::string(rest.substr(start, i - start));
}

struct Number {
  bool ok = false;    // -?[0-9]+
  bool fits = true;   // within int64 (else value is saturated)
  std::int64_t value = 0;
};

Number to_number(std::string_view t) {
  Number n;
  const bool neg = !t.empty() && t[0] == '-';
  const std::string_view digits = t.substr(neg ? 1 : 0);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_digit)) return n;
  n.ok = true;
  if (digits.size() <= 18) {  // below 10^18: no overflow possible
    std::int64_t m = 0;
    for (char c : digits) m = m * 10 + (c - '0');
    n.value = neg ? -m : m;
    return n;
  }
  // Magnitude as unsigned, so that -2^63 fits.
  const std::uint64_t limit =
      neg ? std::uint64_t{1} << 63 : static_cast<std::uint64_t>(INT64_MAX);
  std::uint64_t m = 0;
  for (char c : digits) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (m > (limit - d) / 10) {
      n.fits = false;
      n.value = neg ? INT64_MIN : INT64_MAX;
      return n;
    }
    m = m * 10 + d;
  }
  n.value = neg ? static_cast<std::int64_t>(0 - m) : static_cast<std::int64_t>(m);
  return n;
}

// The number as a decimal without sign or leading zeros to spare (how Python
// prints int("-007")), exact however many digits it has.
std::string number_text(std::string_view t) {
  const bool neg = !t.empty() && t[0] == '-';
  std::string_view d = t.substr(neg ? 1 : 0);
  while (d.size() > 1 && d[0] == '0') d.remove_prefix(1);
  if (d == "0") return "0";
  return (neg ? "-" : "") + std::string(d);
}

// FNV-1a, 64-bit (offset basis and prime of the FNV specification).
std::uint64_t label_hash(std::string_view label) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (char c : label) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return h ^ (h >> 29);
}

// The labels of the open rank block -> their operations (open addressing,
// linear probing). Labels live in one rank's block, and a block is
// contiguous, so one small table, emptied at every '}', serves all ranks and
// stays in cache however large the file.
class BlockLabels {
 public:
  BlockLabels() : slots_(64, -1) {}

  // The slot of label: holding it, or the empty one to put it in.
  std::size_t find(std::string_view label) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t s = label_hash(label) & mask;
    while (slots_[s] >= 0 && labels_[static_cast<std::size_t>(slots_[s])] != label) {
      s = (s + 1) & mask;
    }
    return s;
  }
  // The block's operation number of label (-1: not defined).
  std::int32_t at(std::size_t slot) const { return slots_[slot]; }
  // Add label (at the slot find() returned) as the block's next operation.
  void put(std::size_t slot, std::string_view label) {
    slots_[slot] = static_cast<std::int32_t>(labels_.size());
    labels_.push_back(label);
    used_.push_back(slot);
  }
  // Keeps the load under one half; call before find() for a later put().
  void reserve_one() {
    if (2 * (labels_.size() + 1) <= slots_.size()) return;
    std::fill(slots_.begin(), slots_.end(), -1);
    slots_.resize(slots_.size() * 2, -1);
    used_.clear();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t k = 0; k < labels_.size(); ++k) {
      std::size_t s = label_hash(labels_[k]) & mask;
      while (slots_[s] >= 0) s = (s + 1) & mask;
      slots_[s] = static_cast<std::int32_t>(k);
      used_.push_back(s);
    }
  }
  void clear() {
    for (std::size_t s : used_) slots_[s] = -1;
    used_.clear();
    labels_.clear();
  }

 private:
  std::vector<std::int32_t> slots_;
  std::vector<std::string_view> labels_;
  std::vector<std::size_t> used_;
};

struct Require {
  std::int64_t line;
  std::string_view after, before;
};

class Parser {
 public:
  explicit Parser(std::string_view text);
  GoalProgram run();

 private:
  void tokenize();
  void end_statement();
  void header();
  void statement();
  void rank_statement(std::int64_t line);
  void close_block();
  void operation(std::int64_t line);
  void send_recv(GoalOpKind kind, std::int64_t line);
  Number number(const Token& t, std::string_view what, std::int64_t line,
                bool suffix_b = false) const;
  void add_op(GoalOpKind kind, std::int64_t line, std::string_view label,
              RankId peer = -1, std::int64_t size = 0, std::int64_t tag = -1);
  void to_rank_major();
  [[noreturn]] static void fail(const std::string& message, const char* element,
                                std::int64_t line) {
    throw GoalError(message, element, line);
  }

  std::string_view text_;
  TokenList cur_;
  std::int64_t statements_ = 0;
  std::int64_t last_line_ = 1;
  std::unique_ptr<GoalError> pending_;  // the first parse error
  // The program so far, in file order (req_* hold file-order operations).
  GoalProgram g_;
  RankId rank_ = -1;  // the open rank block (-1: none)
  std::vector<std::int64_t> first_op_;  // per rank: its first operation (-1: none yet)
  bool ranks_in_order_ = true;          // blocks so far in increasing rank order
  RankId rank_of_last_block_ = -1;
  // the open block: its labels and its requires, resolved when it closes
  BlockLabels labels_;
  std::vector<Require> reqs_;
  // The first undefined label (in rank order): reported once the whole text
  // has parsed, for a reader that resolves labels after parsing.
  RankId bad_rank_ = -1;
  std::int64_t bad_line_ = 0;
  std::string bad_label_;
};

Parser::Parser(std::string_view text) : text_(text) {
  // A GOAL operation takes some 30 bytes or more (schedgen's and ours take
  // 30 to 50): reserving for one per 24 bytes avoids most regrowth, and
  // memory not written to is not committed.
  const std::size_t ops = text.size() / 24 + 16;
  g_.kind.reserve(ops);
  g_.rank.reserve(ops);
  g_.peer.reserve(ops);
  g_.size.reserve(ops);
  g_.tag.reserve(ops);
  g_.line.reserve(ops);
  g_.label_offsets.reserve(ops + 1);
  g_.req_after.reserve(ops);
  g_.req_before.reserve(ops);
}

void Parser::tokenize() {
  const std::string_view s = text_;
  const std::size_t n = s.size();
  std::size_t pos = 0;
  std::int64_t line = 1;
  const auto push = [&](std::size_t start, std::size_t end) {
    if (!pending_) cur_.push(s.substr(start, end - start), line);
    last_line_ = line;
  };
  while (pos < n) {
    while (pos < n && char_class(s[pos]) == kBlank) ++pos;
    if (pos == n) break;
    const char c = s[pos];
    const char next = pos + 1 < n ? s[pos + 1] : '\0';
    if (c == '\n') {
      end_statement();
      ++line;
      ++pos;
    } else if (c == '/' && next == '/') {
      const std::size_t eol = s.find('\n', pos);
      pos = eol == std::string_view::npos ? n : eol;
    } else if (c == '/' && next == '*' && s.find("*/", pos + 2) != std::string_view::npos) {
      const std::size_t end = s.find("*/", pos + 2) + 2;
      line += std::count(s.begin() + static_cast<std::ptrdiff_t>(pos),
                         s.begin() + static_cast<std::ptrdiff_t>(end), '\n');
      pos = end;
    } else if (is_alpha(c)) {
      std::size_t end = pos + 1;
      while (end < n && is_word_char(s[end])) ++end;
      if (end < n && s[end] == ':') ++end;
      push(pos, end);
      pos = end;
    } else if (is_digit(c) || (c == '-' && is_digit(next))) {
      std::size_t end = pos + 1;
      while (end < n && is_digit(s[end])) ++end;
      if (end < n && s[end] == 'b') ++end;
      push(pos, end);
      pos = end;
    } else if (c == '{' || c == '}') {
      push(pos, pos + 1);
      end_statement();
      ++pos;
    } else {
      const std::string word = unexpected_word(s.substr(pos));
      throw GoalError("unexpected text " + quote(word), "", line,
                      GoalError::Kind::unexpected_text, word);
    }
  }
  end_statement();
}

void Parser::end_statement() {
  if (cur_.empty()) return;
  if ((++statements_ & (kInterruptStride - 1)) == 0) poll_interrupt();
  try {
    if (statements_ == 1) header();
    else statement();
  } catch (const GoalError& e) {
    pending_ = std::make_unique<GoalError>(e);
  }
  cur_.clear();
}

Number Parser::number(const Token& t, std::string_view what, std::int64_t line,
                      bool suffix_b) const {
  std::string_view v = t.text;
  if (suffix_b && !v.empty() && v.back() == 'b') v.remove_suffix(1);
  const Number n = to_number(v);
  if (!n.ok) {
    fail(std::string(what) + " must be an integer, got " + quote(t.text), "statement",
         line);
  }
  return n;
}

void Parser::header() {
  const TokenList& w = cur_;
  if (w[0].text != "num_ranks" || w.size() != 2) {
    fail("a GOAL file starts with 'num_ranks N'", "num_ranks", w[0].line);
  }
  const Number n = number(w[1], "num_ranks", w[1].line);
  if (n.value < 1 || n.value > kGoalMaxRanks) {
    fail("num_ranks must be in [1, " + std::to_string(kGoalMaxRanks) + "], got " +
             number_text(w[1].text),
         "num_ranks", w[0].line);
  }
  g_.num_ranks = static_cast<RankId>(n.value);
  first_op_.assign(static_cast<std::size_t>(g_.num_ranks), -1);
}

void Parser::statement() {
  const TokenList& w = cur_;
  const std::int64_t line = w[0].line;
  const std::string_view first = w[0].text;
  if (first == "rank") {
    rank_statement(line);
    return;
  }
  if (w.size() == 1 && first == "}") {
    if (rank_ < 0) fail("'}' without a rank block", "rank", line);
    close_block();
    return;
  }
  if (rank_ < 0) {
    fail(quote(join(w.data(), w.data() + w.size())) + " outside a rank block",
         "statement", line);
  }
  if (w.size() == 3 && (w[1].text == "requires" || w[1].text == "irequires")) {
    reqs_.push_back({line, w[0].text, w[2].text});
    return;
  }
  if (first.back() != ':') {
    fail("expected 'label: operation' or 'lA requires lB', got " +
             quote(join(w.data(), w.data() + w.size())),
         "statement", line);
  }
  operation(line);
}

void Parser::rank_statement(std::int64_t line) {
  const TokenList& w = cur_;
  if (rank_ >= 0) fail("'rank' inside a rank block (missing '}')", "rank", line);
  if (w.size() != 3 || w[2].text != "{") fail("expected 'rank N {'", "rank", line);
  const Number r = number(w[1], "rank", line);
  if (r.value < 0 || r.value >= g_.num_ranks) {
    fail("rank " + number_text(w[1].text) + " is outside [0, " +
             std::to_string(g_.num_ranks - 1) + "]",
         "rank", line);
  }
  const auto ri = static_cast<std::size_t>(r.value);
  if (first_op_[ri] >= 0) {
    fail("rank " + std::to_string(r.value) + " appears twice", "rank", line);
  }
  if (rank_of_last_block_ > r.value) ranks_in_order_ = false;
  rank_of_last_block_ = static_cast<RankId>(r.value);
  first_op_[ri] = g_.num_ops();
  rank_ = static_cast<RankId>(r.value);
}

// The end of a rank block: its requires name its own labels.
void Parser::close_block() {
  const std::int64_t base = first_op_[static_cast<std::size_t>(rank_)];
  for (const Require& q : reqs_) {
    const std::int32_t after = labels_.at(labels_.find(q.after));
    const std::int32_t before = labels_.at(labels_.find(q.before));
    if (after < 0 || before < 0) {
      if (bad_rank_ < 0 || rank_ < bad_rank_) {
        bad_rank_ = rank_;
        bad_line_ = q.line;
        bad_label_ = std::string(after < 0 ? q.after : q.before);
      }
      break;
    }
    g_.req_after.push_back(static_cast<std::int32_t>(base + after));
    g_.req_before.push_back(static_cast<std::int32_t>(base + before));
  }
  reqs_.clear();
  labels_.clear();
  rank_ = -1;
}

void Parser::operation(std::int64_t line) {
  const TokenList& w = cur_;
  const std::string_view label = w[0].text.substr(0, w[0].text.size() - 1);
  labels_.reserve_one();
  const std::size_t slot = labels_.find(label);
  if (labels_.at(slot) >= 0) {
    fail("label " + quote(label) + " is defined twice in rank " + std::to_string(rank_),
         "statement", line);
  }
  if (w.size() == 1) fail(std::string(label) + ": missing operation", "statement", line);
  const std::string_view kind = w[1].text;
  if (kind == "send" || kind == "recv") {
    send_recv(kind == "send" ? GoalOpKind::send : GoalOpKind::recv, line);
  } else if (kind == "calc") {
    if (w.size() < 3) fail("expected 'calc TIME'", "calc", line);
    number(w[2], "calc time", line);  // any integer: calc takes no time here
    add_op(GoalOpKind::calc, line, label);
  } else {
    fail("unknown operation " + quote(kind) + " (send, recv or calc)", "statement", line);
  }
  labels_.put(slot, label);
}

void Parser::send_recv(GoalOpKind kind, std::int64_t line) {
  const Token* body = cur_.data() + 1;
  const std::size_t nb = cur_.size() - 1;
  const bool send = kind == GoalOpKind::send;
  const char* name = send ? "send" : "recv";
  const std::string_view prep = send ? "to" : "from";
  if (nb < 6 || body[2].text != prep || body[4].text != "tag") {
    fail(std::string("expected '") + name + " SIZEb " + std::string(prep) +
             " PEER tag TAG'",
         name, line);
  }
  for (std::size_t k = 6; k < nb; k += 2) {
    if (nb - k < 2 || (body[k].text != "cpu" && body[k].text != "nic")) {
      fail("unexpected " + quote(join(body + k, body + nb)) + " after the " + name, name,
           line);
    }
    number(body[k + 1], body[k].text, line);  // which CPU / NIC: not modelled
  }
  const Number size = number(body[1], "size", line, true);
  const Number peer = number(body[3], "peer", line);
  const Number tag = number(body[5], "tag", line);
  std::string_view size_digits = body[1].text;
  if (size_digits.back() == 'b') size_digits.remove_suffix(1);
  if (size.value < 0) fail("size must be >= 0, got " + number_text(size_digits), name, line);
  if (peer.value == -1 || tag.value == -1) {
    fail(std::string(name) +
             " with any-source / any-tag (-1) is not supported: the match would "
             "depend on timing",
         name, line);
  }
  if (peer.value < 0 || peer.value >= g_.num_ranks || peer.value == rank_) {
    fail("peer " + number_text(body[3].text) + " must be another rank in [0, " +
             std::to_string(g_.num_ranks - 1) + "]",
         name, line);
  }
  // LogGOPSim keeps 64-bit sizes and 32-bit tags; larger ones are refused.
  if (!size.fits) fail("size must fit in 64 bits, got " + number_text(size_digits), name, line);
  if (!tag.fits) fail("tag must fit in 64 bits, got " + number_text(body[5].text), name, line);
  add_op(kind, line, cur_[0].text.substr(0, cur_[0].text.size() - 1),
         static_cast<RankId>(peer.value), size.value, tag.value);
}

void Parser::add_op(GoalOpKind kind, std::int64_t line, std::string_view label, RankId peer,
                    std::int64_t size, std::int64_t tag) {
  if (g_.num_ops() >= std::numeric_limits<std::int32_t>::max()) {
    fail("more than 2^31 - 1 operations", "statement", line);
  }
  g_.kind.push_back(kind);
  g_.rank.push_back(rank_);
  g_.peer.push_back(peer);
  g_.size.push_back(size);
  g_.tag.push_back(tag);
  g_.line.push_back(line);
  g_.label_text += label;
  g_.label_offsets.push_back(static_cast<std::int64_t>(g_.label_text.size()));
}

GoalProgram Parser::run() {
  tokenize();
  if (pending_) throw GoalError(*pending_);
  if (statements_ == 0) fail("a GOAL file starts with 'num_ranks N'", "num_ranks", 1);
  if (rank_ >= 0) {
    fail("rank " + std::to_string(rank_) + ": missing '}' at the end of the file", "rank",
         last_line_);
  }
  if (bad_rank_ >= 0) {
    fail("rank " + std::to_string(bad_rank_) + ": label " + quote(bad_label_) +
             " is not defined",
         "requires", bad_line_);
  }
  if (!ranks_in_order_) to_rank_major();
  return std::move(g_);
}

// Rank blocks in increasing rank order. Each block is contiguous in the file,
// so whole blocks move: file operation i goes to pos[i].
void Parser::to_rank_major() {
  const auto n = static_cast<std::size_t>(g_.num_ops());
  const auto p = static_cast<std::size_t>(g_.num_ranks);
  std::vector<std::int64_t> base(p + 1, 0);
  for (std::size_t i = 0; i < n; ++i) ++base[static_cast<std::size_t>(g_.rank[i]) + 1];
  for (std::size_t r = 0; r < p; ++r) base[r + 1] += base[r];
  std::vector<std::int32_t> pos(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = static_cast<std::size_t>(g_.rank[i]);
    pos[i] = static_cast<std::int32_t>(base[r] + static_cast<std::int64_t>(i) - first_op_[r]);
  }
  const auto permute = [&](auto& v) {
    auto out = v;
    for (std::size_t i = 0; i < n; ++i) out[static_cast<std::size_t>(pos[i])] = v[i];
    v.swap(out);
  };
  GoalProgram h;
  h.label_offsets.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    h.label_offsets[static_cast<std::size_t>(pos[i]) + 1] =
        g_.label_offsets[i + 1] - g_.label_offsets[i];
  }
  for (std::size_t k = 0; k < n; ++k) h.label_offsets[k + 1] += h.label_offsets[k];
  h.label_text.resize(g_.label_text.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view lab = g_.label(static_cast<std::int64_t>(i));
    std::copy(lab.begin(), lab.end(),
              h.label_text.begin() + h.label_offsets[static_cast<std::size_t>(pos[i])]);
  }
  g_.label_offsets.swap(h.label_offsets);
  g_.label_text.swap(h.label_text);
  permute(g_.kind);
  permute(g_.rank);
  permute(g_.peer);
  permute(g_.size);
  permute(g_.tag);
  permute(g_.line);
  for (auto* reqs : {&g_.req_after, &g_.req_before}) {
    for (std::int32_t& op : *reqs) op = pos[static_cast<std::size_t>(op)];
  }
}

}  // namespace

GoalProgram parse_goal(std::string_view text) { return Parser(text).run(); }

}  // namespace wafercoll
