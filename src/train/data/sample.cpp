// The sample generator: a RedPajama-format corpus from text every Debian machine here has.
//   common-licenses    /usr/share/common-licenses/*            (package base-files)      prose
//   python-docstrings  docstrings of /usr/lib/python3.N/**.py  (libpython3.N-minimal,    prose
//                                                               libpython3.N-stdlib)
//   python-source      the same files whole                    (RedPajama's "github")    code
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <regex>
#include <set>
#include <unordered_set>

#include "common/fs.h"
#include "endure/data.h"
#include "train/data/byte_stream.h"
#include "train/data/docstrings.h"
#include "train/data/mix.h"

namespace endure::data {
namespace {

constexpr size_t kMinDocstringBytes = 40;
constexpr size_t kMinDocumentBytes = 200;

struct SampleDoc {
  std::string line;  // the JSONL line, newline included
  bool prose = false;
};

std::string jsonl_line(const std::string& text, json meta) {
  json j = {{"text", text}, {"meta", std::move(meta)}};
  // Source files are UTF-8 (PEP 3120) but a stray byte must not stop the sample.
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// The newest /usr/lib/python3.N that holds the standard library.
std::filesystem::path find_python_dir() {
  std::filesystem::path best;
  int best_minor = -1;
  static const std::regex name(R"(python3\.(\d+))");
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib", ec)) {
    std::smatch m;
    std::string n = e.path().filename().string();
    if (std::regex_match(n, m, name) && std::filesystem::exists(e.path() / "os.py", ec)) {
      int minor = std::stoi(m[1].str());
      if (minor > best_minor) best_minor = minor, best = e.path();
    }
  }
  return best;
}

void add_licenses(const std::filesystem::path& dir, std::vector<SampleDoc>* docs) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  std::set<std::filesystem::path> seen;  // GPL -> GPL-3 and the like are links
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    if (seen.insert(std::filesystem::canonical(e.path(), ec)).second) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto text = fs::read_file(f);
    if (!text.ok() || text->size() < kMinDocumentBytes) continue;
    docs->push_back({jsonl_line(*text, {{"source", "common-licenses"},
                                        {"package", "base-files"},
                                        {"path", f.string()}}),
                     true});
  }
}

void add_python(const std::filesystem::path& dir, std::vector<SampleDoc>* docs) {
  static const std::set<std::string> skip = {"test",          "tests",         "idle_test",
                                             "site-packages", "dist-packages", "__pycache__"};
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && skip.count(it->path().filename().string())) {
      it.disable_recursion_pending();
    } else if (it->is_regular_file(ec) && it->path().extension() == ".py") {
      files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  const std::string collection = "python" + dir.filename().string().substr(6) + "-stdlib";
  for (const auto& f : files) {
    auto source = fs::read_file(f);
    if (!source.ok() || source->find('\0') != std::string::npos) continue;
    std::string prose;
    for (const auto& d : extract_docstrings(*source, kMinDocstringBytes)) {
      prose += (prose.empty() ? "" : "\n\n") + d;
    }
    if (prose.size() >= kMinDocumentBytes) {
      docs->push_back({jsonl_line(prose, {{"source", "python-docstrings"},
                                          {"package", collection},
                                          {"path", f.string()}}),
                       true});
    }
    if (source->size() >= kMinDocumentBytes) {
      docs->push_back({jsonl_line(*source, {{"source", "python-source"},
                                            {"package", collection},
                                            {"path", f.string()},
                                            {"language", "Python"}}),
                       false});
    }
  }
}

void shuffle(std::vector<size_t>* v, uint64_t key) {
  SplitMix64 rng(key);
  for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[rng.below(i)]);
}

}  // namespace

Result<SampleSummary> write_sample(const SampleOptions& o) {
  if (o.out.empty()) return make_error("ValidationException", "--out is required");
  if (o.bytes == 0) return make_error("ValidationException", "--bytes must be positive");
  std::filesystem::path licenses =
      o.licenses_dir.empty() ? "/usr/share/common-licenses" : o.licenses_dir;
  std::filesystem::path python = o.python_dir.empty() ? find_python_dir() : o.python_dir;

  std::vector<SampleDoc> docs;
  add_licenses(licenses, &docs);
  if (!python.empty()) add_python(python, &docs);
  // One copy of each text (some modules are the same file twice).
  std::unordered_set<uint64_t> texts;
  std::vector<size_t> prose, code;
  SampleSummary summary;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (!texts.insert(XXH3_64bits(docs[i].line.data(), docs[i].line.size())).second) continue;
    (docs[i].prose ? prose : code).push_back(i);
    summary.available += docs[i].line.size();
  }
  if (prose.empty() && code.empty()) {
    return make_error("NotFound", "no text found in " + licenses.string() +
                                      " (package base-files) or a /usr/lib/python3.N "
                                      "(libpython3.N-stdlib)");
  }
  if (o.bytes > summary.available) {
    return make_error("ValidationException",
                      "--bytes " + std::to_string(o.bytes) + " is more than the text found on " +
                          "this machine gives: at most " + std::to_string(summary.available));
  }

  // Prose first, in a seeded order, then code, until the size is reached; then the chosen
  // documents are shuffled so that sources mix through the file.
  shuffle(&prose, mix64(o.seed, 1));
  shuffle(&code, mix64(o.seed, 2));
  std::vector<size_t> chosen;
  for (const auto* pool : {&prose, &code}) {
    for (size_t i : *pool) {
      if (summary.bytes >= o.bytes) break;
      chosen.push_back(i);
      summary.bytes += docs[i].line.size();
    }
  }
  shuffle(&chosen, mix64(o.seed, 3));
  std::string out;
  out.reserve(summary.bytes);
  for (size_t i : chosen) out += docs[i].line;
  summary.documents = chosen.size();

  if (has_zst_suffix(o.out)) {
    std::string z(ZSTD_compressBound(out.size()), '\0');
    size_t n = ZSTD_compress(z.data(), z.size(), out.data(), out.size(), 3);
    if (ZSTD_isError(n))
      return make_error("Internal", std::string("zstd: ") + ZSTD_getErrorName(n));
    z.resize(n);
    out.swap(z);
  }
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::absolute(o.out).parent_path();
  if (!std::filesystem::create_directories(parent, ec) && ec) {
    return make_error("IOError", "create " + parent.string() + ": " + ec.message());
  }
  if (auto s = fs::atomic_write_file(o.out, out); !s.ok()) return s.error();
  return summary;
}

}  // namespace endure::data
