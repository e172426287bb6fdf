#include "distributed/io/safetensors.h"

#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace strata {

namespace {

constexpr char kSave[] = "save_safetensors";
constexpr char kLoad[] = "load_safetensors";

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian bytes; a big-endian host needs byte swaps");

const char* format_name(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Bool: return "BOOL";
    case ScalarType::Int64: return "I64";
    case ScalarType::Float32: return "F32";
    case ScalarType::Float64: return "F64";
  }
  return "";
}

ScalarType dtype_named(const std::string& name, const std::string& tensor) {
  if (name == "BOOL") return kBool;
  if (name == "I64") return kInt64;
  if (name == "F32") return kFloat32;
  if (name == "F64") return kFloat64;
  STRATA_FAIL(kLoad, "tensor \"", tensor, "\" has dtype ", name,
              "; Strata reads BOOL, I64, F32 and F64");
}

std::string json_string(const std::string& s) {
  std::ostringstream out;
  out << '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (c < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      out << "\\u00" << kHex[c >> 4] << kHex[c & 15];
    } else {
      out << c;
    }
  }
  out << '"';
  return out.str();
}

// The part of JSON the header uses: objects, arrays, strings and non-negative
// integers.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : text_(text) {}

  template <class OnMember>
  void object(OnMember&& on_member) {
    expect('{');
    if (peek() == '}') {
      ++pos_;
      return;
    }
    while (true) {
      const std::string key = string();
      expect(':');
      on_member(key);
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return;
    }
  }

  std::vector<int64_t> integers() {
    std::vector<int64_t> values;
    expect('[');
    if (peek() == ']') {
      ++pos_;
      return values;
    }
    while (true) {
      values.push_back(integer());
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return values;
    }
  }

  int64_t integer() {
    skip_space();
    STRATA_CHECK(pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])),
                 kLoad, "header: expected a non-negative integer at byte ", pos_);
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      STRATA_CHECK(value < (int64_t{1} << 58), kLoad, "header: integer too large at byte ", pos_);
      value = value * 10 + (text_[pos_++] - '0');
    }
    return value;
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      STRATA_CHECK(pos_ < text_.size(), kLoad, "header: unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      STRATA_CHECK(pos_ < text_.size(), kLoad, "header: unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': out += code_point(); break;
        default: out += e;
      }
    }
  }

  void end() {
    skip_space();
    STRATA_CHECK(pos_ == text_.size(), kLoad, "header: unexpected text at byte ", pos_);
  }

 private:
  // \uXXXX as UTF-8 (the basic plane; the header's names are rarely beyond it).
  std::string code_point() {
    STRATA_CHECK(pos_ + 4 <= text_.size(), kLoad, "header: short \\u escape");
    const unsigned value = static_cast<unsigned>(std::stoul(text_.substr(pos_, 4), nullptr, 16));
    pos_ += 4;
    std::string out;
    if (value < 0x80) {
      out += static_cast<char>(value);
    } else if (value < 0x800) {
      out += static_cast<char>(0xc0 | (value >> 6));
      out += static_cast<char>(0x80 | (value & 0x3f));
    } else {
      out += static_cast<char>(0xe0 | (value >> 12));
      out += static_cast<char>(0x80 | ((value >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (value & 0x3f));
    }
    return out;
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() {
    skip_space();
    STRATA_CHECK(pos_ < text_.size(), kLoad, "header: ends early");
    return text_[pos_];
  }
  void expect(char c) {
    STRATA_CHECK(peek() == c, kLoad, "header: expected '", c, "' at byte ", pos_, ", found '",
                 text_[pos_], "'");
    ++pos_;
  }

  const std::string& text_;
  size_t pos_ = 0;
};

struct Entry {
  ScalarType dtype = kFloat32;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;
};

struct File {
  std::map<std::string, Entry> entries;
  std::map<std::string, std::string> metadata;
  std::vector<char> data;
};

File read_file(const std::string& path, bool with_data) {
  std::ifstream in(path, std::ios::binary);
  STRATA_CHECK(in.good(), kLoad, "cannot open ", path);
  unsigned char length_bytes[8];
  in.read(reinterpret_cast<char*>(length_bytes), 8);
  STRATA_CHECK(in.gcount() == 8, kLoad, path, " is shorter than a safetensors header");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
  STRATA_CHECK(length <= (uint64_t{100} << 20), kLoad, path, ": a header of ", length,
               " bytes is not a safetensors header");
  std::string header(length, '\0');
  in.read(header.data(), static_cast<std::streamsize>(length));
  STRATA_CHECK(static_cast<uint64_t>(in.gcount()) == length, kLoad, path, " ends in its header");

  File file;
  HeaderParser parser(header);
  parser.object([&](const std::string& name) {
    if (name == "__metadata__") {
      parser.object([&](const std::string& key) { file.metadata[key] = parser.string(); });
      return;
    }
    Entry entry;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    parser.object([&](const std::string& field) {
      if (field == "dtype") {
        entry.dtype = dtype_named(parser.string(), name);
        has_dtype = true;
      } else if (field == "shape") {
        entry.shape = parser.integers();
        has_shape = true;
      } else if (field == "data_offsets") {
        const std::vector<int64_t> offsets = parser.integers();
        STRATA_CHECK(offsets.size() == 2 && offsets[0] <= offsets[1], kLoad, "tensor \"", name,
                     "\" has bad data_offsets");
        entry.begin = offsets[0];
        entry.end = offsets[1];
        has_offsets = true;
      } else {
        STRATA_FAIL(kLoad, "tensor \"", name, "\" has an unknown field \"", field, "\"");
      }
    });
    STRATA_CHECK(has_dtype && has_shape && has_offsets, kLoad, "tensor \"", name,
                 "\" lacks dtype, shape or data_offsets");
    int64_t numel = 1;
    for (int64_t s : entry.shape) numel *= s;
    STRATA_CHECK(entry.end - entry.begin == numel * element_size(entry.dtype), kLoad, "tensor \"",
                 name, "\": data_offsets span ", entry.end - entry.begin, " bytes, its shape needs ",
                 numel * element_size(entry.dtype));
    file.entries[name] = entry;
  });
  parser.end();
  if (!with_data) return file;

  in.seekg(0, std::ios::end);
  const auto data_bytes = static_cast<int64_t>(in.tellg()) - 8 - static_cast<int64_t>(length);
  in.seekg(static_cast<std::streamoff>(8 + length));
  for (const auto& named : file.entries) {  // no structured binding: STRATA_CHECK's lambda (clang 14)
    STRATA_CHECK(named.second.end <= data_bytes, kLoad, "tensor \"", named.first, "\" ends at byte ",
                 named.second.end, " of a data section of ", data_bytes);
  }
  file.data.resize(static_cast<size_t>(data_bytes));
  in.read(file.data.data(), data_bytes);
  STRATA_CHECK(in.gcount() == data_bytes, kLoad, path, ": could not read the data");
  return file;
}

}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<Tensor> contiguous;
  std::ostringstream header;
  header << '{';
  bool first = true;
  if (!metadata.empty()) {
    header << "\"__metadata__\":{";
    for (const auto& [key, value] : metadata) {
      header << (first ? "" : ",") << json_string(key) << ':' << json_string(value);
      first = false;
    }
    header << '}';
  }
  int64_t offset = 0;
  for (const auto& named : tensors) {
    const std::string& name = named.first;  // not a structured binding: STRATA_CHECK's lambda
    const Tensor& t = named.second;
    STRATA_CHECK(name != "__metadata__", kSave, "\"__metadata__\" cannot name a tensor");
    STRATA_CHECK(t.defined() && t.device().is_cpu(), kSave, "tensor \"", name,
                 "\" is not a defined CPU tensor");
    contiguous.push_back(t.contiguous());
    const int64_t bytes = t.numel() * element_size(t.dtype());
    header << (metadata.empty() && contiguous.size() == 1 ? "" : ",") << json_string(name)
           << ":{\"dtype\":\"" << format_name(t.dtype()) << "\",\"shape\":[";
    for (int64_t d = 0; d < t.dim(); ++d) header << (d ? "," : "") << t.size(d);
    header << "],\"data_offsets\":[" << offset << ',' << offset + bytes << "]}";
    offset += bytes;
  }
  header << '}';
  std::string text = header.str();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned

  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    STRATA_CHECK(out.good(), kSave, "cannot write ", partial);
    unsigned char length_bytes[8];
    for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(text.size() >> (8 * i));
    out.write(reinterpret_cast<const char*>(length_bytes), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const Tensor& t : contiguous) {
      if (t.numel() == 0) continue;
      out.write(static_cast<const char*>(t.data_ptr()),
                static_cast<std::streamsize>(t.numel() * element_size(t.dtype())));
    }
    STRATA_CHECK(out.good(), kSave, "writing ", partial, " failed");
  }
  // A crash mid-write leaves the previous checkpoint whole.
  STRATA_CHECK(std::rename(partial.c_str(), path.c_str()) == 0, kSave, "cannot rename ", partial,
               " to ", path);
}

std::map<std::string, Tensor> load_safetensors(const std::string& path) {
  const File file = read_file(path, true);
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, entry] : file.entries) {
    const Tensor t = empty(Shape(entry.shape), entry.dtype);
    if (entry.end > entry.begin) {
      std::memcpy(t.data_ptr(), file.data.data() + entry.begin,
                  static_cast<size_t>(entry.end - entry.begin));
    }
    tensors.emplace(name, t);
  }
  return tensors;
}

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  return read_file(path, false).metadata;
}

}  // namespace strata
