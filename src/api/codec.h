// How a message type becomes JSON and back. Each message lists its fields once, in wire
// order, as a static template
//
//   template <class S, class V> static void fields(S& self, V&& visit) {
//     visit(field::kClusterName, self.cluster_name);
//     visit(field::kNodeRecovery, self.node_recovery);  // a std::optional: may be absent
//   }
//
// and write(), read() and field_list() below walk that one list, so the encoder, the
// decoder and the documented field names cannot disagree. A member is a string, bool,
// integer, double, json (passed through as is), an enum (its name on the wire: ADL finds
// name(E), parse_value(text, E&) and value_names(E) beside it), another message, a
// std::vector of those, or a std::optional of any of them (absent on the wire when empty).
// A member wrapped in defaulted() is always written and may be absent when read (it keeps
// its default).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "api/wire.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::api {

// One field of a message as the registry (messages.h) and the docs name it.
struct FieldInfo {
  std::string name;
  bool optional = false;
  bool operator==(const FieldInfo&) const = default;
};

namespace codec {

template <class T>
concept Message = requires {
  { T::kName } -> std::convertible_to<const char*>;
};

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class T>
json encode(const T& value) {
  if constexpr (Message<T>) {
    return value.to_json();
  } else if constexpr (std::is_enum_v<T>) {
    return json(name(value));
  } else if constexpr (IsVector<T>::value) {
    json list = json::array();
    for (const auto& item : value) list.push_back(encode(item));
    return list;
  } else {
    return json(value);
  }
}

// Reads value into out; on failure returns "<path>: <rule>".
template <class T>
std::optional<std::string> decode(const json& value, const std::string& path, T& out) {
  if constexpr (std::is_same_v<T, json>) {
    out = value;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) return path + ": must be a string";
    out = value.get<std::string>();
  } else if constexpr (std::is_enum_v<T>) {
    if (!value.is_string()) return path + ": must be a string";
    if (!parse_value(value.get<std::string>(), out)) {
      return path + ": must be one of " + value_names(T{});
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) return path + ": must be a boolean";
    out = value.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    bool fits = value.is_number_integer() &&
                !(value.is_number_unsigned() &&
                  value.get<unsigned long long>() >
                      static_cast<unsigned long long>(std::numeric_limits<long long>::max()));
    long long n = fits ? value.get<long long>() : 0;
    if (!fits || n < std::numeric_limits<T>::min() || n > std::numeric_limits<T>::max()) {
      return path + ": must be an integer";
    }
    out = static_cast<T>(n);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number()) return path + ": must be a number";
    out = value.get<T>();
  } else if constexpr (IsVector<T>::value) {
    if (!value.is_array()) return path + ": must be an array";
    out.clear();
    for (size_t i = 0; i < value.size(); ++i) {
      typename T::value_type item{};
      if (auto e = decode(value[i], path + "[" + std::to_string(i) + "]", item)) return e;
      out.push_back(std::move(item));
    }
  } else {
    static_assert(Message<T>, "a message member must be a value, a vector or a message");
    if (!value.is_object()) return path + ": must be an object";
    auto inner = T::from_json(value);
    if (!inner) return path + "." + inner.error().message;
    out = std::move(*inner);
  }
  return std::nullopt;
}

// Reads in[key] into out when present; absent, out keeps what it holds (its default). On
// failure "<where>.<key>: <rule>" ("<key>: <rule>" without where).
template <class T>
std::optional<std::string> decode_if_present(const json& in, const char* key, T& out,
                                             const std::string& where = "") {
  auto it = in.find(key);
  if (it == in.end()) return std::nullopt;
  return decode(*it, where.empty() ? std::string(key) : where + "." + key, out);
}

// A member that keeps its default when absent: visit(key, defaulted(self.member)).
template <class T>
struct Defaulted {
  T& value;
};
template <class T>
Defaulted<T> defaulted(T& value) {
  return {value};
}

class Writer {
 public:
  explicit Writer(json& out) : out_(out) {}
  template <class T>
  void operator()(const char* key, const T& value) {
    out_[key] = encode(value);
  }
  template <class T>
  void operator()(const char* key, Defaulted<T> member) {
    out_[key] = encode(member.value);
  }
  template <class T>
  void operator()(const char* key, const std::optional<T>& value) {
    if (value) out_[key] = encode(*value);
  }

 private:
  json& out_;
};

// Stops at the first error: one field, one rule, as endured's other errors read.
class Reader {
 public:
  explicit Reader(const json& in) : in_(in) {}
  template <class T>
  void operator()(const char* key, T& out) {
    if (error_) return;
    auto it = in_.find(key);
    if (it == in_.end()) {
      error_ = std::string(key) + ": is required";
      return;
    }
    error_ = decode(*it, key, out);
  }
  template <class T>
  void operator()(const char* key, std::optional<T>& out) {
    if (error_) return;
    auto it = in_.find(key);
    if (it == in_.end()) return;
    T value{};
    error_ = decode(*it, key, value);
    if (!error_) out = std::move(value);
  }
  template <class T>
  void operator()(const char* key, Defaulted<T> member) {
    if (!error_) error_ = decode_if_present(in_, key, member.value);
  }
  const std::optional<std::string>& error() const { return error_; }

 private:
  const json& in_;
  std::optional<std::string> error_;
};

class Lister {
 public:
  explicit Lister(std::vector<FieldInfo>& out) : out_(out) {}
  template <class T>
  void operator()(const char* key, const T&) {
    out_.push_back({key, false});
  }
  template <class T>
  void operator()(const char* key, const std::optional<T>&) {
    out_.push_back({key, true});
  }
  template <class T>
  void operator()(const char* key, Defaulted<T>) {
    out_.push_back({key, true});
  }

 private:
  std::vector<FieldInfo>& out_;
};

template <class T>
json write(const T& message) {
  json out = json::object();
  T::fields(message, Writer(out));
  return out;
}

// Extra fields are ignored; a message with rules beyond its fields' types has a
// `Status check() const`, run after its fields are read.
template <class T>
Result<T> read(const json& in) {
  if (!in.is_object()) {
    return make_error(kValidationException, std::string(T::kName) + ": must be a JSON object");
  }
  T message{};
  Reader reader(in);
  T::fields(message, reader);
  if (reader.error()) return make_error(kValidationException, *reader.error());
  if constexpr (requires(const T& m) { m.check(); }) {
    if (Status s = message.check(); !s) return s.error();
  }
  return message;
}

template <class T>
std::vector<FieldInfo> field_list() {
  std::vector<FieldInfo> out;
  const T message{};
  T::fields(message, Lister(out));
  return out;
}

}  // namespace codec
}  // namespace endure::api
