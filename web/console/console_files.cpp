#include "console/console_files.h"

#include <string_view>

#include "console/embedded_files.h"

namespace endure::console {
namespace {

std::string content_type_of(std::string_view path) {
  auto ends_with = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext;
  };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  // Module scripts load only with a JavaScript type.
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

}  // namespace

bool file(const std::string& path, std::string& body, std::string& content_type) {
  // Only the table's names can match anyway; refusing ".." keeps that true if files are
  // ever read from disk.
  if (path.find("..") != std::string::npos) return false;
  for (std::size_t i = 0; i < embedded::kFileCount; ++i) {
    const auto& f = embedded::kFiles[i];
    if (path == f.path) {
      body.assign(reinterpret_cast<const char*>(f.bytes), f.size);
      content_type = content_type_of(path);
      return true;
    }
  }
  return false;
}

}  // namespace endure::console
