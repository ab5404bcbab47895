#include "agent/health/nvml_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace endure::agent::health {

namespace {
using InitFn = nvml::Return (*)();
using ErrorStringFn = const char* (*)(nvml::Return);
}  // namespace

NvmlLibrary::~NvmlLibrary() {
  if (initialized_) fn<InitFn>("nvmlShutdown")();
  if (handle_ != nullptr) ::dlclose(handle_);
}

std::optional<std::string> NvmlLibrary::open(const std::vector<const char*>& symbols) {
  if (handle_ == nullptr) {
    ::dlerror();
    void* h = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = ::dlerror();
      return fmt::format("NVML not available: {}", why != nullptr ? why : path_);
    }
    std::map<std::string, void*> found;
    std::vector<const char*> wanted = {"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString"};
    wanted.insert(wanted.end(), symbols.begin(), symbols.end());
    for (const char* name : wanted) {
      void* s = ::dlsym(h, name);
      if (s == nullptr) {
        ::dlclose(h);
        return fmt::format("NVML not available: {} has no {}", path_, name);
      }
      found[name] = s;
    }
    handle_ = h;
    symbols_ = std::move(found);
  }
  if (!initialized_) {
    nvml::Return rc = fn<InitFn>("nvmlInit_v2")();
    if (rc != nvml::kSuccess) return "nvmlInit_v2: " + error_text(rc);
    initialized_ = true;
  }
  return std::nullopt;
}

std::string NvmlLibrary::error_text(nvml::Return rc) const {
  auto error_string = fn<ErrorStringFn>("nvmlErrorString");
  const char* s = error_string != nullptr ? error_string(rc) : nullptr;
  return s != nullptr ? fmt::format("{} ({})", s, rc) : fmt::format("error {}", rc);
}

}  // namespace endure::agent::health
