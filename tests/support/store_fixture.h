// A test fixture holding a Store on a fresh database file, which a test can reopen as a
// restarted controller would.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "store/store.h"
#include "support/temp_dir.h"

namespace endure::test {

class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    db_path_ = dir_.str("endured.db");
    store_ = open_store();
    ASSERT_NE(store_, nullptr);
  }

  std::unique_ptr<store::Store> open_store() {
    auto opened = store::Store::open(db_path_);
    EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().message);
    if (!opened.ok()) return nullptr;
    return std::move(*opened);
  }

  void reopen() {
    store_.reset();
    store_ = open_store();
    ASSERT_NE(store_, nullptr);
  }

  TempDir dir_{"endure-store-test"};
  std::string db_path_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace endure::test
