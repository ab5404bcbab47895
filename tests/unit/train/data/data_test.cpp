// endure-data's library: JSONL reading, tokenizer training, prepare, and the loader.
#include "endure/data.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "common/fs.h"
#include "train/data/docstrings.h"
#include "train/data/window_order.h"

namespace endure::data {
namespace {

namespace stdfs = std::filesystem;

class DataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "endure-data-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)fs::remove_tree(dir_); }

  stdfs::path write(const std::string& name, const std::string& content) {
    stdfs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  stdfs::path write_zst(const std::string& name, const std::string& content) {
    std::string z(ZSTD_compressBound(content.size()), '\0');
    z.resize(ZSTD_compress(z.data(), z.size(), content.data(), content.size(), 3));
    return write(name, z);
  }

  // A corpus from the sample generator (licenses and Python docstrings): ~1 MB of prose.
  stdfs::path corpus(uint64_t bytes = 1 << 20) {
    SampleOptions o;
    o.out = dir_ / "corpus.jsonl.zst";
    o.bytes = bytes;
    o.seed = 1;
    auto s = write_sample(o);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return o.out;
  }

  // A prepared folder from corpus(), with small shards so the loader crosses them.
  stdfs::path prepared(const std::string& name = "prepared", int vocab = 1000) {
    PrepareOptions o;
    o.inputs = {corpus_.empty() ? (corpus_ = corpus()) : corpus_};
    o.out = dir_ / name;
    o.tokenizer_options.vocab_size = vocab;
    o.seed = 7;
    o.val_fraction = 0.1;
    o.shard_tokens = 50'000;
    auto s = prepare(o);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return o.out;
  }

  static std::vector<Document> read_all(const stdfs::path& p) {
    std::vector<Document> docs;
    auto r = JsonlReader::open(p);
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (!r.ok()) return docs;
    Document d;
    while (true) {
      auto got = (*r)->next(&d);
      EXPECT_TRUE(got.ok()) << got.error().message;
      if (!got.ok() || !*got) break;
      docs.push_back(d);
    }
    return docs;
  }

  static Error read_error(const stdfs::path& p) {
    auto r = JsonlReader::open(p);
    if (!r.ok()) return r.error();
    Document d;
    while (true) {
      auto got = (*r)->next(&d);
      if (!got.ok()) return got.error();
      if (!*got) return Error{"", "no error"};
    }
  }

  // The files of a folder with their bytes.
  static std::map<std::string, std::string> contents(const stdfs::path& d) {
    std::map<std::string, std::string> out;
    for (const auto& e : stdfs::directory_iterator(d)) {
      out[e.path().filename().string()] = *fs::read_file(e.path());
    }
    return out;
  }

  // Nothing but the named entries in dir_ (no output, no temporary folder left behind).
  void expect_only(std::set<std::string> names) {
    std::set<std::string> found;
    for (const auto& e : stdfs::directory_iterator(dir_)) found.insert(e.path().filename());
    EXPECT_EQ(found, names);
  }

  stdfs::path dir_;
  stdfs::path corpus_;
};

const char* kLines =
    "{\"text\": \"The first document.\\nIt has two lines.\", \"meta\": {\"source\": \"book\"}}\n"
    "\n"
    "{\"text\": \"Ünïcödé — and a tab\\t.\", \"meta\": \"{'url': 'x'}\"}\n"
    "{\"text\": \"\"}\n"
    "{\"text\": \"no newline at the end\", \"meta\": {}}";

TEST_F(DataTest, PlainAndZstdReadTheSameDocuments) {
  auto plain = read_all(write("a.jsonl", kLines));
  auto zst = read_all(write_zst("a.jsonl.zst", kLines));
  // Two frames back to back, as `cat a.zst b.zst` makes: one stream.
  std::string half = std::string(kLines).substr(0, 100), rest = std::string(kLines).substr(100);
  std::string z1(ZSTD_compressBound(half.size()), '\0'), z2(ZSTD_compressBound(rest.size()), '\0');
  z1.resize(ZSTD_compress(z1.data(), z1.size(), half.data(), half.size(), 1));
  z2.resize(ZSTD_compress(z2.data(), z2.size(), rest.data(), rest.size(), 1));
  auto frames = read_all(write("b.jsonl.zst", z1 + z2));
  // A zstd file without the suffix is known by its magic number.
  auto magic = read_all(write_zst("c.jsonl", kLines));

  ASSERT_EQ(plain.size(), 4u);
  EXPECT_EQ(plain[0].text, "The first document.\nIt has two lines.");
  EXPECT_EQ(plain[0].meta["source"], "book");
  EXPECT_EQ(plain[1].line, 3u);  // the blank line 2 is skipped but counted
  EXPECT_EQ(plain[1].text, "Ünïcödé — and a tab\t.");
  EXPECT_TRUE(plain[1].meta.is_string());
  EXPECT_TRUE(plain[2].meta.is_null());
  EXPECT_EQ(plain[3].text, "no newline at the end");
  for (const auto* other : {&zst, &frames, &magic}) {
    ASSERT_EQ(other->size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ((*other)[i].text, plain[i].text);
      EXPECT_EQ((*other)[i].meta, plain[i].meta);
      EXPECT_EQ((*other)[i].line, plain[i].line);
    }
  }
}

TEST_F(DataTest, MalformedLinesNameTheFileAndLine) {
  struct Case {
    std::string line, rule;
  } cases[] = {
      {"{\"text\": \"unterminated}", "not valid JSON"},
      {"{\"meta\": {}}", "missing field \"text\""},
      {"{\"text\": 42}", "field \"text\" must be a string, found number"},
      {"[\"text\"]", "must be a JSON object"},
  };
  for (const auto& c : cases) {
    std::string body = "{\"text\": \"fine\"}\n\n" + c.line + "\n{\"text\": \"after\"}\n";
    for (auto p : {write("bad.jsonl", body), write_zst("bad.jsonl.zst", body)}) {
      Error e = read_error(p);
      EXPECT_EQ(e.code, "ValidationException") << c.line;
      EXPECT_NE(e.message.find(p.string() + ":3: "), std::string::npos) << e.message;
      EXPECT_NE(e.message.find(c.rule), std::string::npos) << e.message;
    }
  }
}

TEST_F(DataTest, BrokenZstdIsAClearError) {
  std::string z = *fs::read_file(write_zst("a.jsonl.zst", std::string(kLines) + kLines));
  Error truncated = read_error(write("t.jsonl.zst", z.substr(0, z.size() - 5)));
  EXPECT_EQ(truncated.code, "ValidationException");
  EXPECT_NE(truncated.message.find("truncated zstd stream"), std::string::npos)
      << truncated.message;
  Error not_zstd = read_error(write("n.jsonl.zst", kLines));
  EXPECT_NE(not_zstd.message.find("zstd magic number"), std::string::npos) << not_zstd.message;
}

TEST_F(DataTest, EmptyCorpusIsAClearErrorAndWritesNothing) {
  auto empty = write("empty.jsonl", "\n{\"text\": \"\"}\n\n");
  auto trained = train_tokenizer({empty}, {});
  ASSERT_FALSE(trained.ok());
  EXPECT_EQ(trained.error().code, "ValidationException");
  EXPECT_NE(trained.error().message.find("the corpus is empty"), std::string::npos)
      << trained.error().message;

  PrepareOptions o;
  o.inputs = {empty};
  o.out = dir_ / "out";
  o.tokenizer_options.vocab_size = 300;
  auto s = prepare(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("the corpus is empty"), std::string::npos);
  expect_only({"empty.jsonl"});
}

TEST_F(DataTest, VocabularyLargerThanTheDataSupportsNamesTheFlag) {
  std::string lines;
  for (int i = 0; i < 50; ++i) {
    lines += "{\"text\": \"A small corpus cannot fill a large vocabulary, line " +
             std::to_string(i) + ".\"}\n";
  }
  auto small = write("small.jsonl", lines);
  PrepareOptions o;
  o.inputs = {small};
  o.out = dir_ / "out";
  o.tokenizer_options.vocab_size = 5000;
  auto s = prepare(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "ValidationException");
  EXPECT_NE(s.error().message.find("--vocab-size 5000 is larger than the data supports"),
            std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("at most "), std::string::npos) << s.error().message;
  expect_only({"small.jsonl"});

  // And one too small for the corpus's characters and the 256 byte pieces.
  o.tokenizer_options.vocab_size = kMinVocabSize;
  o.inputs = {write("chars.jsonl",
                    "{\"text\": \"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ "
                    "0123456789 äöüßéèêàç\"}\n")};
  s = prepare(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("--vocab-size 260 is too small"), std::string::npos)
      << s.error().message;
  expect_only({"small.jsonl", "chars.jsonl"});

  o.tokenizer_options.vocab_size = 10;
  s = prepare(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("--vocab-size 10 must be in"), std::string::npos);
}

TEST_F(DataTest, PrepareIsDeterministicAndWritesWhatTheIndexSays) {
  auto a = prepared("a"), b = prepared("b");
  auto ca = contents(a), cb = contents(b);
  EXPECT_EQ(ca, cb);  // same inputs and seed: the same bytes, file for file
  ASSERT_TRUE(ca.count("index.json") && ca.count("tokenizer.model") &&
              ca.count("train-00000.bin") && ca.count("val-00000.bin"));

  json index = json::parse(ca["index.json"]);
  EXPECT_EQ(index["magic"], "endure-data");
  EXPECT_EQ(index["tokenizer"]["vocab_size"], 1000);
  EXPECT_EQ(index["token_bytes"], 2);
  uint64_t train = index["splits"]["train"]["tokens"], val = index["splits"]["val"]["tokens"];
  EXPECT_GT(train, 100'000u);
  EXPECT_GT(val, 0u);
  EXPECT_LT(val, train / 3);
  uint64_t sum = 0;
  for (const auto& s : index["splits"]["train"]["shards"]) {
    EXPECT_LE(s["tokens"].get<uint64_t>(), 50'000u);
    EXPECT_EQ(ca[s["file"].get<std::string>()].size(), 32 + 2 * s["tokens"].get<uint64_t>());
    sum += s["tokens"].get<uint64_t>();
  }
  EXPECT_EQ(sum, train);

  // The stream starts with BOS and decodes back to the start of a document.
  auto tok = Tokenizer::load(a / "tokenizer.model");
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ((*tok)->vocab_size(), 1000);
  const std::string& shard = ca["train-00000.bin"];
  std::vector<int> ids;
  for (size_t i = 0; i < 200; ++i) {
    ids.push_back(static_cast<uint8_t>(shard[32 + 2 * i]) | static_cast<uint8_t>(shard[33 + 2 * i])
                                                                << 8);
  }
  EXPECT_EQ(ids[0], (*tok)->bos_id());
  std::vector<int> rest(ids.begin() + 1, ids.end());
  std::string text = (*tok)->decode(rest);
  EXPECT_GT(text.size(), 100u);
  // Byte fallback: text outside the vocabulary still round-trips.
  std::string odd = "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and 漢字";
  EXPECT_EQ((*tok)->decode((*tok)->encode(odd, false)), odd);

  // A non-empty --out is refused and left alone.
  PrepareOptions o;
  o.inputs = {corpus_};
  o.out = a;
  o.tokenizer = a / "tokenizer.model";
  auto again = prepare(o);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("already exists"), std::string::npos);
  EXPECT_EQ(contents(a), ca);
}

TEST_F(DataTest, WindowOrderIsABijection) {
  for (uint64_t n : {1, 2, 3, 17, 1000, 4097}) {
    for (uint64_t key : {0, 1, 99}) {
      WindowOrder order(n, key);
      std::set<uint64_t> seen;
      for (uint64_t i = 0; i < n; ++i) seen.insert(order(i));
      EXPECT_EQ(seen.size(), n);
      EXPECT_LT(*seen.rbegin(), n);
    }
  }
  // Different keys, different orders.
  WindowOrder a(1000, 1), b(1000, 2);
  int same = 0;
  for (uint64_t i = 0; i < 1000; ++i) same += a(i) == b(i);
  EXPECT_LT(same, 20);
}

TEST_F(DataTest, LoaderIsDeterministicAndResumesExactly) {
  auto dir = prepared();
  const int B = 4, T = 64;
  auto uninterrupted = TokenLoader::open(dir, "val", B, T, 42);
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.error().message;
  auto& u = **uninterrupted;
  EXPECT_EQ(u.vocab_size(), 1000);
  // Enough steps to cross epochs of the (small) val split.
  const uint64_t steps = 2 * u.windows() / B + 3;
  std::vector<std::vector<int32_t>> want;
  std::vector<int32_t> in(B * T), tgt(B * T);
  for (uint64_t s = 0; s < steps; ++s) {
    u.next(in.data(), tgt.data());
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t + 1 < T; ++t) ASSERT_EQ(tgt[b * T + t], in[b * T + t + 1]);
    }
    for (int32_t id : in) ASSERT_LT(id, 1000);
    want.push_back(in);
    want.push_back(tgt);
  }
  EXPECT_GE(u.position().epoch, 2u);

  // Each epoch visits every window once: the first epoch's inputs cover the split.
  auto again = TokenLoader::open(dir, "val", 1, T, 42);
  std::multiset<std::vector<int32_t>> epoch0, windows;
  std::vector<int32_t> one(T), one_t(T);
  for (uint64_t w = 0; w < (*again)->windows(); ++w) {
    (*again)->next(one.data(), one_t.data());
    epoch0.insert(one);
  }
  EXPECT_EQ((*again)->position().epoch, 1u);
  EXPECT_EQ((*again)->position().cursor, 0u);
  EXPECT_EQ(epoch0.size(), (*again)->windows());

  // Stop after k steps, save the position through JSON, resume in a new loader.
  for (uint64_t k : {uint64_t{0}, uint64_t{1}, steps / 2, steps - 1}) {
    auto first = TokenLoader::open(dir, "val", B, T, 42);
    for (uint64_t s = 0; s < k; ++s) (*first)->next(in.data(), tgt.data());
    std::string saved = (*first)->position().to_json().dump();
    auto pos = LoaderPosition::from_json(json::parse(saved));
    ASSERT_TRUE(pos.ok()) << pos.error().message;
    auto resumed = TokenLoader::open(dir, "val", B, T, /*seed=*/0);  // the seed comes back too
    ASSERT_TRUE((*resumed)->restore(*pos).ok());
    for (uint64_t s = k; s < steps; ++s) {
      (*resumed)->next(in.data(), tgt.data());
      ASSERT_EQ(in, want[2 * s]) << "k=" << k << " step " << s;
      ASSERT_EQ(tgt, want[2 * s + 1]);
    }
  }

  // Another seed, another order.
  auto other = TokenLoader::open(dir, "val", B, T, 43);
  (*other)->next(in.data(), tgt.data());
  EXPECT_NE(in, want[0]);
}

TEST_F(DataTest, LoaderRanksSplitEachStep) {
  auto dir = prepared();
  const int B = 3, T = 32;
  auto whole = TokenLoader::open(dir, "train", 2 * B, T, 5);
  ASSERT_TRUE(whole.ok());
  LoaderOptions o;
  o.dir = dir;
  o.batch = B;
  o.seq_len = T;
  o.seed = 5;
  o.world = 2;
  o.rank = 0;
  auto r0 = TokenLoader::open(o);
  o.rank = 1;
  auto r1 = TokenLoader::open(o);
  ASSERT_TRUE(r0.ok() && r1.ok());
  std::vector<int32_t> w(2 * B * T), wt(2 * B * T), a(B * T), at(B * T), b(B * T), bt(B * T);
  for (int step = 0; step < 5; ++step) {
    (*whole)->next(w.data(), wt.data());
    (*r0)->next(a.data(), at.data());
    (*r1)->next(b.data(), bt.data());
    EXPECT_EQ(std::vector<int32_t>(w.begin(), w.begin() + B * T), a);
    EXPECT_EQ(std::vector<int32_t>(w.begin() + B * T, w.end()), b);
  }
  EXPECT_EQ((*r0)->position().cursor, (*whole)->position().cursor);
}

TEST_F(DataTest, LoaderRejectsDamageAndMismatches) {
  auto dir = prepared();
  ASSERT_TRUE(TokenLoader::open(dir, "train", 2, 16, 0).ok());

  auto pos = (*TokenLoader::open(dir, "train", 2, 16, 0))->position();
  auto other = TokenLoader::open(dir, "train", 2, 32, 0);
  Status s = (*other)->restore(pos);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("seq_len 16"), std::string::npos) << s.error().message;
  pos.seq_len = 32;
  s = (*TokenLoader::open(dir, "val", 2, 32, 0))->restore(pos);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("other data"), std::string::npos) << s.error().message;
  EXPECT_FALSE(LoaderPosition::from_json(json{{"epoch", 1}}).ok());

  auto bad = TokenLoader::open(dir, "test", 2, 16, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "ValidationException");
  bad = TokenLoader::open(dir, "val", 1, 10'000'000, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("fewer than one window"), std::string::npos);

  // One flipped byte in a shard's tokens.
  stdfs::path shard = dir / "train-00001.bin";
  std::string bytes = *fs::read_file(shard);
  bytes[1000] ^= 0x01;
  ASSERT_TRUE(fs::atomic_write_file(shard, bytes).ok());
  bad = TokenLoader::open(dir, "train", 2, 16, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "CorruptData");
  EXPECT_NE(bad.error().message.find("train-00001.bin: checksum mismatch"), std::string::npos)
      << bad.error().message;
  // A shard cut short.
  bytes[1000] ^= 0x01;
  ASSERT_TRUE(fs::atomic_write_file(shard, bytes.substr(0, bytes.size() - 2)).ok());
  bad = TokenLoader::open(dir, "train", 2, 16, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("does not match the index"), std::string::npos);
  ASSERT_TRUE(fs::atomic_write_file(shard, bytes).ok());
  ASSERT_TRUE(TokenLoader::open(dir, "train", 2, 16, 0).ok());

  // An edited index.
  std::string index = *fs::read_file(dir / "index.json");
  index.replace(index.find("\"seed\": 7"), 9, "\"seed\": 8");
  ASSERT_TRUE(fs::atomic_write_file(dir / "index.json", index).ok());
  bad = TokenLoader::open(dir, "train", 2, 16, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("index.json: checksum mismatch"), std::string::npos)
      << bad.error().message;
}

TEST_F(DataTest, SampleIsDeterministicRedPajamaJsonl) {
  SampleOptions o;
  o.bytes = 300'000;
  o.seed = 3;
  o.out = dir_ / "a.jsonl";
  auto a = write_sample(o);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_GE(a->bytes, o.bytes);
  o.out = dir_ / "b.jsonl";
  ASSERT_TRUE(write_sample(o).ok());
  o.out = dir_ / "c.jsonl";
  o.seed = 4;
  ASSERT_TRUE(write_sample(o).ok());
  o.out = dir_ / "a.jsonl.zst";
  o.seed = 3;
  ASSERT_TRUE(write_sample(o).ok());
  EXPECT_EQ(*fs::read_file(dir_ / "a.jsonl"), *fs::read_file(dir_ / "b.jsonl"));
  EXPECT_NE(*fs::read_file(dir_ / "a.jsonl"), *fs::read_file(dir_ / "c.jsonl"));
  EXPECT_LT(stdfs::file_size(dir_ / "a.jsonl.zst"), stdfs::file_size(dir_ / "a.jsonl"));

  auto docs = read_all(dir_ / "a.jsonl");
  auto zdocs = read_all(dir_ / "a.jsonl.zst");
  ASSERT_EQ(docs.size(), a->documents);
  ASSERT_EQ(zdocs.size(), docs.size());
  std::set<std::string> sources;
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_EQ(docs[i].text, zdocs[i].text);
    sources.insert(docs[i].meta.at("source").get<std::string>());
    EXPECT_TRUE(docs[i].meta.contains("path"));
  }
  // 300 kB is prose alone: licenses and docstrings, no source code yet.
  EXPECT_TRUE(sources.count("python-docstrings"));
  EXPECT_FALSE(sources.count("python-source"));

  o.bytes = a->available + 1;
  auto too_much = write_sample(o);
  ASSERT_FALSE(too_much.ok());
  EXPECT_NE(too_much.error().message.find("--bytes"), std::string::npos);
}

TEST(Docstrings, AreCleanedAndFiltered) {
  std::string src =
      "\"\"\"Module doc.\n\n    Indented body\n      more.\n    \"\"\"\n"
      "def f():\n    '''short'''\n    x = \"\"\"\n    A string of enough length here.\n"
      "    \"\"\"\n";
  auto docs = extract_docstrings(src, 10);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], "Module doc.\n\nIndented body\n  more.");
  EXPECT_EQ(docs[1], "A string of enough length here.");
}

}  // namespace
}  // namespace endure::data
