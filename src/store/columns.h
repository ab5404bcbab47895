// A row type's columns, listed once: each column's name, how the row's member is bound to a
// statement and how it is read back. Every SELECT list, INSERT and UPDATE of the row is made
// from that one list, so a column cannot be bound in one order and read in another. Shared
// by the store's files; not part of its interface.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/states.h"
#include "common/json.h"
#include "store/statement.h"

namespace endure::store::detail {

template <class Row>
struct Column {
  const char* name;
  std::function<void(Stmt&, const Row&)> bind;
  std::function<void(const Stmt&, int, Row&)> read;
};

// A member stored as itself: a string, an int, a long long, a double or a bool.
template <class Row, class T>
Column<Row> column(const char* name, T Row::*member) {
  return {name,
          [member](Stmt& s, const Row& r) {
            if constexpr (std::is_same_v<T, bool>) {
              s.bind(r.*member ? 1 : 0);
            } else {
              s.bind(r.*member);
            }
          },
          [member](const Stmt& s, int i, Row& r) {
            if constexpr (std::is_same_v<T, std::string>) {
              r.*member = s.text(i);
            } else if constexpr (std::is_same_v<T, bool>) {
              r.*member = s.i32(i) != 0;
            } else if constexpr (std::is_same_v<T, int>) {
              r.*member = s.i32(i);
            } else if constexpr (std::is_same_v<T, long long>) {
              r.*member = s.i64(i);
            } else {
              static_assert(std::is_same_v<T, double>, "a column is text, an integer or a real");
              r.*member = s.real(i);
            }
          }};
}

// A JSON member, stored as its text; a text that is not `valid` reads as `otherwise`.
template <class Row>
Column<Row> json_column(const char* name, json Row::*member, bool (*valid)(const json&),
                        json otherwise) {
  return {name, [member](Stmt& s, const Row& r) { s.bind((r.*member).dump()); },
          [member, valid, otherwise](const Stmt& s, int i, Row& r) {
            json value = json::parse(s.text(i), nullptr, false);
            r.*member = !value.is_discarded() && valid(value) ? std::move(value) : otherwise;
          }};
}

// A state (api/states.h), stored as its name; a name this build does not know (a newer
// endured's, a hand edit) reads as `otherwise`.
template <class Row, class E>
Column<Row> state_column(const char* name, E Row::*member,
                         std::optional<E> (*parse)(std::string_view), E otherwise) {
  return {name, [member](Stmt& s, const Row& r) { s.bind(api::name(r.*member)); },
          [member, parse, otherwise](const Stmt& s, int i, Row& r) {
            r.*member = parse(s.text(i)).value_or(otherwise);
          }};
}

// A state that may be absent, stored as its name or "".
template <class Row, class E>
Column<Row> optional_state_column(const char* name, std::optional<E> Row::*member,
                                  std::optional<E> (*parse)(std::string_view)) {
  return {name,
          [member](Stmt& s, const Row& r) { s.bind(r.*member ? api::name(*(r.*member)) : ""); },
          [member, parse](const Stmt& s, int i, Row& r) { r.*member = parse(s.text(i)); }};
}

template <class Row>
class Columns {
 public:
  // The first column is the row's key (UPDATE ... WHERE key=?).
  Columns(std::initializer_list<Column<Row>> columns) : columns_(columns) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      names_ += (i ? ", " : "") + std::string(columns_[i].name);
      placeholders_ += i ? ",?" : "?";
      if (i > 0) {
        assignments_ += (i > 1 ? ", " : "") + std::string(columns_[i].name) + "=?";
        names_but_key_ += (i > 1 ? ", " : "") + std::string(columns_[i].name);
      }
    }
  }

  // "a, b, c": a SELECT list, or an INSERT's column list.
  const std::string& names() const { return names_; }
  // INSERT INTO table (...) VALUES (...); `verb` may be "INSERT OR REPLACE".
  std::string insert(const char* table, const char* verb = "INSERT") const {
    return std::string(verb) + " INTO " + table + " (" + names_ + ") VALUES (" + placeholders_ +
           ")";
  }
  // INSERT INTO table (every column but the key): a key SQLite numbers itself.
  std::string insert_numbered(const char* table) const {
    return std::string("INSERT INTO ") + table + " (" + names_but_key_ + ") VALUES (" +
           placeholders_.substr(2) + ")";
  }
  // UPDATE table SET every column but the key WHERE key=?
  std::string update(const char* table) const {
    return std::string("UPDATE ") + table + " SET " + assignments_ + " WHERE " +
           columns_.front().name + "=?";
  }

  // Binds every column, in order (an insert).
  void bind_all(Stmt& s, const Row& r) const {
    for (const auto& c : columns_) c.bind(s, r);
  }
  // Binds what update() asks for: every column but the key, then the key.
  void bind_update(Stmt& s, const Row& r) const {
    bind_but_key(s, r);
    columns_.front().bind(s, r);
  }
  // Binds what insert_numbered() asks for.
  void bind_but_key(Stmt& s, const Row& r) const {
    for (size_t i = 1; i < columns_.size(); ++i) columns_[i].bind(s, r);
  }
  // The row a SELECT of names() stepped onto.
  Row read(const Stmt& s) const {
    Row r;
    for (size_t i = 0; i < columns_.size(); ++i) columns_[i].read(s, static_cast<int>(i), r);
    return r;
  }

 private:
  std::vector<Column<Row>> columns_;
  std::string names_;
  std::string names_but_key_;
  std::string placeholders_;
  std::string assignments_;
};

}  // namespace endure::store::detail
