#pragma once
/// @file json.hpp
/// @brief A small JSON reader and string escaping, for plans written by `graphpool-plan --json`
/// (no CUDA header). Numbers keep their text, so 64-bit byte counts stay exact.

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graphpool/error.hpp"

namespace graphpool::detail {

/// @return `text` as a JSON string literal, quotes included.
[[nodiscard]] inline std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(ch)));
          out += escaped;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

/// @brief One parsed JSON value.
struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  std::string text;  ///< a string's value, or a number's text
  std::vector<json_value> items;
  std::map<std::string, json_value> members;

  /// @return member `key` of an object. @throws graphpool::error naming `where` and the key when absent.
  [[nodiscard]] const json_value& at(const std::string& key, const std::string& where) const {
    if (type != kind::object) throw error(where + ": expected an object");
    const auto found = members.find(key);
    if (found == members.end()) throw error(where + ": the key \"" + key + "\" is missing");
    return found->second;
  }
  [[nodiscard]] bool has(const std::string& key) const { return type == kind::object && members.count(key) != 0; }

  /// @return a non-negative integer. @throws graphpool::error naming `where` otherwise.
  [[nodiscard]] unsigned long long unsigned_integer(const std::string& where) const {
    if (type != kind::number || text.empty() || text[0] == '-' ||
        text.find_first_of(".eE") != std::string::npos) {
      throw error(where + ": expected a non-negative integer, found " + (type == kind::number ? text : "no number"));
    }
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) throw error(where + ": " + text + " does not fit in 64 bits");
    return value;
  }
  /// @return true or false. @throws graphpool::error naming `where` for any other value.
  [[nodiscard]] bool boolean_value(const std::string& where) const {
    if (type != kind::boolean) throw error(where + ": expected true or false");
    return boolean;
  }
  [[nodiscard]] const std::vector<json_value>& array(const std::string& where) const {
    if (type != kind::array) throw error(where + ": expected an array");
    return items;
  }
  [[nodiscard]] const std::string& string(const std::string& where) const {
    if (type != kind::string) throw error(where + ": expected a string");
    return text;
  }
};

/// @brief Parses one JSON document. @throws graphpool::error naming the byte offset of the problem.
class json_reader {
 public:
  [[nodiscard]] static json_value parse(std::string_view text) {
    json_reader reader(text);
    json_value value = reader.value(0);
    reader.skip_space();
    if (reader.at_ < text.size()) reader.fail("text after the document");
    return value;
  }

 private:
  explicit json_reader(std::string_view text) : text_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw error("JSON: " + what + " at byte " + std::to_string(at_));
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t' || text_[at_] == '\r')) ++at_;
  }
  void expect(char ch) {
    skip_space();
    if (at_ >= text_.size() || text_[at_] != ch) fail(std::string("expected '") + ch + "'");
    ++at_;
  }
  bool take(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  json_value value(int depth) {
    if (depth > 64) fail("nesting deeper than 64");
    skip_space();
    if (at_ >= text_.size()) fail("unexpected end");
    json_value v;
    const char ch = text_[at_];
    if (ch == '{') {
      v.type = json_value::kind::object;
      ++at_;
      skip_space();
      if (at_ < text_.size() && text_[at_] == '}') {
        ++at_;
        return v;
      }
      do {
        skip_space();
        std::string key = string_literal();
        expect(':');
        v.members[key] = value(depth + 1);
        skip_space();
      } while (at_ < text_.size() && text_[at_] == ',' && ++at_);
      expect('}');
    } else if (ch == '[') {
      v.type = json_value::kind::array;
      ++at_;
      skip_space();
      if (at_ < text_.size() && text_[at_] == ']') {
        ++at_;
        return v;
      }
      do {
        v.items.push_back(value(depth + 1));
        skip_space();
      } while (at_ < text_.size() && text_[at_] == ',' && ++at_);
      expect(']');
    } else if (ch == '"') {
      v.type = json_value::kind::string;
      v.text = string_literal();
    } else if (take("true")) {
      v.type = json_value::kind::boolean;
      v.boolean = true;
    } else if (take("false")) {
      v.type = json_value::kind::boolean;
    } else if (take("null")) {
    } else if (ch == '-' || is_digit(ch)) {
      v.type = json_value::kind::number;
      v.text = number_literal();
    } else {
      fail(std::string("unexpected '") + ch + "'");
    }
    return v;
  }

  static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }
  bool digit_here() const { return at_ < text_.size() && is_digit(text_[at_]); }

  // JSON's number: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?; anything else ("0002", "1.", "2e")
  // fails here, and text right after it ("2-1") fails where the document expects ',' or a closing bracket.
  std::string number_literal() {
    const std::size_t start = at_;
    if (text_[at_] == '-') ++at_;
    if (!digit_here()) fail("a malformed number (a digit must follow '-')");
    if (text_[at_] == '0') {
      ++at_;
      if (digit_here()) fail("a malformed number (a leading zero)");
    } else {
      while (digit_here()) ++at_;
    }
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      if (!digit_here()) fail("a malformed number (a digit must follow '.')");
      while (digit_here()) ++at_;
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      if (!digit_here()) fail("a malformed number (a digit must follow the exponent)");
      while (digit_here()) ++at_;
    }
    return std::string(text_.substr(start, at_ - start));
  }

  std::string string_literal() {
    if (at_ >= text_.size() || text_[at_] != '"') fail("expected a string");
    ++at_;
    std::string out;
    while (at_ < text_.size() && text_[at_] != '"') {
      char ch = text_[at_++];
      if (ch == '\\') {
        if (at_ >= text_.size()) fail("unfinished escape");
        const char escaped = text_[at_++];
        switch (escaped) {
          case 'n': ch = '\n'; break;
          case 't': ch = '\t'; break;
          case 'r': ch = '\r'; break;
          case 'b': ch = '\b'; break;
          case 'f': ch = '\f'; break;
          case 'u': {
            if (at_ + 4 > text_.size()) fail("unfinished \\u escape");
            for (std::size_t k = at_; k < at_ + 4; ++k) {
              if (std::string_view("0123456789abcdefABCDEF").find(text_[k]) == std::string_view::npos) {
                fail("a \\u escape needs four hex digits");
              }
            }
            const unsigned long code = std::strtoul(std::string(text_.substr(at_, 4)).c_str(), nullptr, 16);
            at_ += 4;
            if (code > 0x7f) fail("a \\u escape beyond ASCII");
            ch = static_cast<char>(code);
            break;
          }
          default: ch = escaped;  // '"', '\\', '/'
        }
      }
      out += ch;
    }
    if (at_ >= text_.size()) fail("unfinished string");
    ++at_;
    return out;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace graphpool::detail
