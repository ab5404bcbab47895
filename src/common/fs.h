// File helpers: every write that matters goes through atomic_write_file.
#pragma once

#include <filesystem>
#include <string>

#include "common/result.h"

namespace endure::fs {

// An IOError naming what failed, the path and errno's text.
Error io_error(const std::string& what, const std::filesystem::path& path);

// Writes data to path so that a crash leaves either the old file or the new one:
// write a temp file in the same folder, fsync it, rename it over path, fsync the folder.
Status atomic_write_file(const std::filesystem::path& path, const std::string& data,
                         int mode = 0644);

// Reads a whole file. Fails with code "NotFound" when it does not exist.
Result<std::string> read_file(const std::filesystem::path& path);

// mkdir -p; the last folder gets the given mode (whether it existed or not), the ones on
// the way the umask's default.
Status make_dirs(const std::filesystem::path& path, int mode = 0755);

// Removes a tree; succeeds when it is already gone.
Status remove_tree(const std::filesystem::path& path);

// Last n lines of a file (the whole file when shorter); empty when unreadable.
std::string tail_lines(const std::filesystem::path& path, int n);

// fsyncs a folder so that a rename or create inside it is durable.
Status sync_dir(const std::filesystem::path& dir);

// A name a file written by another party may give for a file beside it: non-empty, no '/',
// not "." or "..", so that joined to its folder it stays in that folder.
bool is_plain_file_name(const std::string& name);

}  // namespace endure::fs
