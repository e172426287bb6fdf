#pragma once

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "func/trace/graph.h"
#include "tensor/error.h"

// The tokens of one line of graph text (Note [Trace graph text] in printer.cpp),
// for parser.cpp.

namespace strata::graph_text {

// A parsed literal before the schema gives it a type.
struct Literal {
  enum class Kind { None, Bool, Int, Double, Ref, Word, String, List, Generator };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double d = 0.0;
  std::string text;  // Word, String
  std::vector<Literal> items;
  uint64_t seed = 0, offset = 0;
};

class LineParser {
 public:
  LineParser(std::string_view line, size_t line_number) : s_(line), line_(line_number) {}

  [[noreturn]] void fail(const std::string& what) const {
    std::ostringstream out;
    out << "line " << line_ << ", column " << pos_ + 1 << ": " << what << "\n  " << s_ << "\n  "
        << std::string(pos_, ' ') << '^';
    STRATA_FAIL("Graph::parse", out.str());
  }
  void skip_space() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  bool accept_word(std::string_view w) {
    skip_space();
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::string word() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                 s_[pos_] == '_' || s_[pos_] == ':' || s_[pos_] == '.')) {
      ++pos_;
    }
    if (pos_ == start) fail("expected a name");
    return std::string(s_.substr(start, pos_ - start));
  }
  int64_t integer() {
    skip_space();
    const std::string str(s_.substr(pos_));
    char* end = nullptr;
    const long long v = std::strtoll(str.c_str(), &end, 10);
    if (end == str.c_str()) fail("expected an integer");
    pos_ += static_cast<size_t>(end - str.c_str());
    return v;
  }
  int64_t ref() {
    expect('%');
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      fail("expected a value number after '%'");
    }
    return integer();
  }
  ValueType type() {
    ValueType t;
    skip_space();
    const size_t at = pos_;
    const std::string dtype = word();
    if (dtype == "Bool") t.dtype = kBool;
    else if (dtype == "Int64") t.dtype = kInt64;
    else if (dtype == "Float32") t.dtype = kFloat32;
    else if (dtype == "Float64") t.dtype = kFloat64;
    else {
      pos_ = at;
      fail("unknown dtype '" + dtype + "'");
    }
    expect('[');
    while (!accept(']')) {
      if (!t.sizes.empty()) expect(',');
      t.sizes.push_back(integer());
    }
    skip_space();
    if (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) {
      t.device = Device(word());
    }
    return t;
  }
  Literal literal() {
    skip_space();
    Literal l;
    if (peek('%')) {
      l.kind = Literal::Kind::Ref;
      l.i = ref();
    } else if (accept('[')) {
      l.kind = Literal::Kind::List;
      while (!accept(']')) {
        if (!l.items.empty()) expect(',');
        l.items.push_back(literal());
      }
    } else if (accept('\'')) {
      l.kind = Literal::Kind::String;
      const size_t close = s_.find('\'', pos_);
      if (close == std::string_view::npos) fail("unterminated string");
      l.text = std::string(s_.substr(pos_, close - pos_));
      pos_ = close + 1;
    } else if (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
                                     s_[pos_] == '-' || s_[pos_] == '+')) {
      const std::string str(s_.substr(pos_));
      char* end = nullptr;
      const double d = std::strtod(str.c_str(), &end);
      if (end == str.c_str()) fail("expected a number");
      const std::string number = str.substr(0, static_cast<size_t>(end - str.c_str()));
      pos_ += number.size();
      if (number.find_first_of(".eEin") == std::string::npos) {
        l.kind = Literal::Kind::Int;
        l.i = std::strtoll(number.c_str(), nullptr, 10);
      } else {
        l.kind = Literal::Kind::Double;
        l.d = d;
      }
    } else {
      const std::string w = word();
      if (w == "None") {
        l.kind = Literal::Kind::None;
      } else if (w == "True" || w == "False") {
        l.kind = Literal::Kind::Bool;
        l.b = w == "True";
      } else if (w == "inf" || w == "nan") {
        l.kind = Literal::Kind::Double;
        l.d = std::strtod(w.c_str(), nullptr);
      } else if (w == "generator") {
        l.kind = Literal::Kind::Generator;
        expect('(');
        if (!accept_word("seed=")) fail("expected seed=");
        l.seed = static_cast<uint64_t>(integer());
        expect(',');
        if (!accept_word("offset=")) fail("expected offset=");
        l.offset = static_cast<uint64_t>(integer());
        expect(')');
      } else {
        l.kind = Literal::Kind::Word;
        l.text = w;
      }
    }
    return l;
  }

  size_t pos_ = 0;

 private:
  std::string_view s_;
  size_t line_;
};

}  // namespace strata::graph_text
