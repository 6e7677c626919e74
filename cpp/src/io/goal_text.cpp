// GOAL input as text: reading a file whole, checking that it is UTF-8 or
// transcoding UTF-16 (after its byte-order mark) to UTF-8, and the two entry
// points that chain decoding, parsing and matching.
//
// The checks are those of a strict decoder (Unicode 15, chapter 3, table 3-7
// "well-formed UTF-8 byte sequences"; UTF-16 surrogate pairs, section 3.9):
// no overlong forms, no encoded surrogates, nothing above U+10FFFF, no lone
// surrogate in UTF-16, no odd trailing byte. The core only says *that* the
// bytes are malformed (GoalError kind encoding); the caller's own decoder,
// run again on the rare bad file, says where in its own words.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "wafercoll/io/goal.hpp"

namespace wafercoll {

namespace {

[[noreturn]] void bad_encoding() {
  throw GoalError("not UTF-8 text", "", 0, GoalError::Kind::encoding);
}

// Length of the well-formed UTF-8 sequence starting at s[i] (a non-ASCII lead
// byte), or 0 when it is malformed.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100u;
  };
  const unsigned c = b(0);
  const auto cont = [](unsigned x) { return x >= 0x80 && x <= 0xBF; };
  if (c >= 0xC2 && c <= 0xDF) return cont(b(1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
    const unsigned hi = c == 0xED ? 0x9F : 0xBF;  // no surrogates
    return b(1) >= lo && b(1) <= hi && cont(b(2)) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80;  // no overlong forms
    const unsigned hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
    return b(1) >= lo && b(1) <= hi && cont(b(2)) && cont(b(3)) ? 4 : 0;
  }
  return 0;
}

void check_utf8(std::string_view s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    // ASCII runs, eight bytes at a time (GOAL files are ASCII but for comments).
    while (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence(s, i);
    if (len == 0) bad_encoding();
    i += len;
  }
}

void put_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// UTF-16 code units after the byte-order mark, little- or big-endian.
void utf16_to_utf8(std::string_view units, bool little, std::string& out) {
  if (units.size() % 2 != 0) bad_encoding();
  const auto* u = reinterpret_cast<const unsigned char*>(units.data());
  const std::size_t n = units.size() / 2;
  const auto unit = [&](std::size_t k) -> std::uint32_t {
    return little ? (u[2 * k] | (u[2 * k + 1] << 8)) : ((u[2 * k] << 8) | u[2 * k + 1]);
  };
  out.clear();
  out.reserve(n + n / 2);
  for (std::size_t k = 0; k < n; ++k) {
    std::uint32_t c = unit(k);
    if (c >= 0xD800 && c <= 0xDBFF) {
      if (k + 1 >= n) bad_encoding();
      const std::uint32_t d = unit(k + 1);
      if (d < 0xDC00 || d > 0xDFFF) bad_encoding();
      c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00);
      ++k;
    } else if (c >= 0xDC00 && c <= 0xDFFF) {
      bad_encoding();
    }
    put_utf8(out, c);
  }
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

std::string_view decode_goal_bytes(std::string_view bytes, std::string& storage) {
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF") bytes.remove_prefix(3);
  else if (bytes.substr(0, 2) == "\xFF\xFE" || bytes.substr(0, 2) == "\xFE\xFF") {
    utf16_to_utf8(bytes.substr(2), bytes[0] == '\xFF', storage);
    return storage;
  }
  check_utf8(bytes);
  return bytes;
}

GoalMessages read_goal_file(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) throw std::invalid_argument("cannot open GOAL file " + path);
  // Read straight into a buffer of the size the file has now (not zeroed
  // first), then on to the end in case it grew; one copy of the file is
  // kept, and the text is a view of it.
  std::size_t size = 0, cap = 0;
  if (std::fseek(f.get(), 0, SEEK_END) == 0) {
    const long end = std::ftell(f.get());
    cap = end > 0 ? static_cast<std::size_t>(end) + 1 : 0;
    std::rewind(f.get());
  }
  std::unique_ptr<char[]> bytes(new char[std::max<std::size_t>(cap, 1 << 16)]);
  cap = std::max<std::size_t>(cap, 1 << 16);
  for (std::size_t got; (got = std::fread(bytes.get() + size, 1, cap - size, f.get())) > 0;) {
    size += got;
    if (size == cap) {  // the file grew: twice the room
      std::unique_ptr<char[]> more(new char[2 * cap]);
      std::copy(bytes.get(), bytes.get() + size, more.get());
      bytes.swap(more);
      cap *= 2;
    }
  }
  if (std::ferror(f.get())) throw std::invalid_argument("cannot read GOAL file " + path);
  f.reset();
  GoalProgram program;
  {
    std::string storage;
    program = parse_goal(decode_goal_bytes(std::string_view(bytes.get(), size), storage));
  }
  bytes.reset();  // the program holds all it needs
  return match_goal(std::move(program));
}

GoalMessages read_goal_text(std::string_view text) { return match_goal(parse_goal(text)); }

}  // namespace wafercoll
