#include "fsx/passthrough.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <string_view>

namespace endure::fsx {

namespace {

const Backing& backing() { return *static_cast<const Backing*>(fuse_get_context()->private_data); }

// "/a/b" -> "a/b"; "/" -> "." (the root itself). FUSE hands us absolute, normalised paths.
std::string relative(const char* path) {
  std::string_view p(path);
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  return p.empty() ? std::string(".") : std::string(p);
}

// Set once openat2() turns out missing (old kernel, seccomp filter): from then on the
// component walk below is used.
std::atomic<bool> no_openat2{false};

// Opens rel beneath root one component at a time, following no symlink at all: slower
// than openat2(), and stricter, for the kernels that lack it.
int open_by_walk(int root, const std::string& rel, int flags) {
  int cur = root;
  size_t start = 0;
  while (true) {
    size_t slash = rel.find('/', start);
    std::string part = rel.substr(start, slash == std::string::npos ? slash : slash - start);
    bool last = slash == std::string::npos;
    if (part == "..") {
      if (cur != root) ::close(cur);
      return -EXDEV;
    }
    int next;
    if (last) {
      next = ::openat(cur, part.empty() ? "." : part.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
    } else if (part.empty() || part == ".") {
      start = slash + 1;
      continue;
    } else {
      next = ::openat(cur, part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    int err = errno;
    if (cur != root) ::close(cur);
    if (next < 0) return -err;
    if (last) return next;
    cur = next;
    start = slash + 1;
  }
}

// Opens rel beneath root: openat2(RESOLVE_BENEATH) refuses ".." above the root, absolute
// symlinks and symlinks that lead out of it. The kernel resolves symlinks on its own side
// and re-reads each folder's attributes before walking through it, so a path through a
// symlink reaches us only when another node swaps a folder for one in between; even then
// this daemon (root) must not be sent outside the shared folder. Returns an fd or -errno.
int open_beneath(int root, const std::string& rel, int flags) {
  if (!no_openat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = ::syscall(SYS_openat2, root, rel.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != ENOSYS && errno != EPERM) return -errno;
    no_openat2.store(true, std::memory_order_relaxed);
  }
  return open_by_walk(root, rel, flags);
}

// A path split into its folder (an fd beneath the root) and its last name, so that every
// *at() call acts on that name itself, never on what a symlink there points to.
class Entry {
 public:
  explicit Entry(const char* path) {
    if (path == nullptr) {
      err_ = -EBADF;
      return;
    }
    std::string rel = relative(path);
    size_t slash = rel.rfind('/');
    dir_ = backing().root_fd;
    if (slash == std::string::npos) {
      name_ = rel;
      return;
    }
    name_ = rel.substr(slash + 1);
    int fd = open_beneath(dir_, rel.substr(0, slash), O_PATH | O_DIRECTORY);
    if (fd < 0) {
      err_ = fd;
      return;
    }
    dir_ = fd;
    owned_ = true;
  }
  ~Entry() {
    if (owned_) ::close(dir_);
  }
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  int error() const { return err_; }  // 0, or -errno when the folder could not be opened
  int dir() const { return dir_; }
  const char* name() const { return name_.c_str(); }

 private:
  int dir_ = -1;
  bool owned_ = false;
  int err_ = 0;
  std::string name_;
};

int fh(const fuse_file_info* fi) { return static_cast<int>(fi->fh); }
int neg_errno() { return -errno; }

// The owner a new entry in folder dir should get: the caller, with the folder's group when
// the folder is setgid (the kernel already gave it that group). False: leave it as it is.
bool owner_for_new(int dir, uid_t* uid, gid_t* gid) {
  if (!backing().give_to_caller) return false;
  const fuse_context* ctx = fuse_get_context();
  struct stat st {};
  bool setgid_dir = ::fstat(dir, &st) == 0 && (st.st_mode & S_ISGID);
  *uid = ctx->uid;
  *gid = setgid_dir ? static_cast<gid_t>(-1) : ctx->gid;
  return !(*uid == 0 && (*gid == 0 || setgid_dir));
}

// Gives a just-created entry to its caller; on failure removes it, so a create either
// happens whole or not at all.
int give_new_entry(const Entry& e, bool is_dir) {
  uid_t uid;
  gid_t gid;
  if (!owner_for_new(e.dir(), &uid, &gid)) return 0;
  if (::fchownat(e.dir(), e.name(), uid, gid, AT_SYMLINK_NOFOLLOW) == 0) return 0;
  int err = -errno;
  ::unlinkat(e.dir(), e.name(), is_dir ? AT_REMOVEDIR : 0);
  return err;
}

// Opens an existing regular file for writing, for the calls that may come without an open
// file (truncate, fallocate). O_NONBLOCK: a FIFO there must not block the daemon.
int open_for_write(const Entry& e) {
  int fd = ::openat(e.dir(), e.name(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

void* op_init(fuse_conn_info* conn, fuse_config* cfg) {
  cfg->use_ino = 1;  // the backing inode numbers: hard links stay recognisable
  // Calls on an open file or folder get no path (NULL), only fi->fh: they keep working
  // after a rename or unlink. So unlink can really unlink, leaving no .fuse_hidden files in
  // the shared folder (a daemon killed meanwhile would leave them forever). The price,
  // libfuse's: fstat(2) of an open file whose name is gone fails with ESTALE.
  cfg->nullpath_ok = 1;
  cfg->hard_remove = 1;
  // Shared by nodes that each have their own mount: cache no attributes and no negative
  // lookups, and drop cached pages at each open (close-to-open consistency, like NFS).
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->entry_timeout = 1;
  cfg->kernel_cache = 0;
  cfg->auto_cache = 0;
  // Checkpoints stream large writes; libfuse lowers this to what its buffer and the kernel
  // (max_pages) accept.
  conn->max_write = 1u << 20;
  // Each write goes to the backing file before write() returns, so fsync means what it
  // says and another node sees it.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  return fuse_get_context()->private_data;
}

int op_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi != nullptr) return ::fstat(fh(fi), st) == 0 ? 0 : neg_errno();
  Entry e(path);
  if (e.error()) return e.error();
  return ::fstatat(e.dir(), e.name(), st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : neg_errno();
}

int op_readlink(const char* path, char* buf, size_t size) {
  if (size == 0) return -EINVAL;
  Entry e(path);
  if (e.error()) return e.error();
  ssize_t n = ::readlinkat(e.dir(), e.name(), buf, size - 1);
  if (n < 0) return neg_errno();
  buf[n] = '\0';
  return 0;
}

int op_mkdir(const char* path, mode_t mode) {
  Entry e(path);
  if (e.error()) return e.error();
  if (::mkdirat(e.dir(), e.name(), mode) != 0) return neg_errno();
  return give_new_entry(e, true);
}

int op_unlink(const char* path) {
  Entry e(path);
  if (e.error()) return e.error();
  return ::unlinkat(e.dir(), e.name(), 0) == 0 ? 0 : neg_errno();
}

int op_rmdir(const char* path) {
  Entry e(path);
  if (e.error()) return e.error();
  return ::unlinkat(e.dir(), e.name(), AT_REMOVEDIR) == 0 ? 0 : neg_errno();
}

int op_symlink(const char* target, const char* path) {
  Entry e(path);
  if (e.error()) return e.error();
  if (::symlinkat(target, e.dir(), e.name()) != 0) return neg_errno();
  return give_new_entry(e, false);
}

int op_rename(const char* from, const char* to, unsigned int flags) {
  Entry a(from);
  if (a.error()) return a.error();
  Entry b(to);
  if (b.error()) return b.error();
  // renameat2 only when asked: it carries RENAME_NOREPLACE / RENAME_EXCHANGE, which some
  // backing file systems lack, and plain rename must keep working on those.
  int rc = flags != 0 ? ::renameat2(a.dir(), a.name(), b.dir(), b.name(), flags)
                      : ::renameat(a.dir(), a.name(), b.dir(), b.name());
  return rc == 0 ? 0 : neg_errno();
}

int op_link(const char* from, const char* to) {
  Entry a(from);
  if (a.error()) return a.error();
  Entry b(to);
  if (b.error()) return b.error();
  return ::linkat(a.dir(), a.name(), b.dir(), b.name(), 0) == 0 ? 0 : neg_errno();
}

int op_chmod(const char* path, mode_t mode, fuse_file_info* fi) {
  if (fi != nullptr) return ::fchmod(fh(fi), mode) == 0 ? 0 : neg_errno();
  Entry e(path);
  if (e.error()) return e.error();
  if (::fchmodat(e.dir(), e.name(), mode, AT_SYMLINK_NOFOLLOW) == 0) return 0;
  // glibc does AT_SYMLINK_NOFOLLOW through /proc; without /proc, fall back to a plain
  // chmod once the name is known not to be a symlink.
  if (errno != ENOTSUP && errno != EOPNOTSUPP) return neg_errno();
  struct stat st {};
  if (::fstatat(e.dir(), e.name(), &st, AT_SYMLINK_NOFOLLOW) != 0) return neg_errno();
  if (S_ISLNK(st.st_mode)) return -EOPNOTSUPP;
  return ::fchmodat(e.dir(), e.name(), mode, 0) == 0 ? 0 : neg_errno();
}

int op_chown(const char* path, uid_t uid, gid_t gid, fuse_file_info* fi) {
  if (fi != nullptr) return ::fchown(fh(fi), uid, gid) == 0 ? 0 : neg_errno();
  Entry e(path);
  if (e.error()) return e.error();
  return ::fchownat(e.dir(), e.name(), uid, gid, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : neg_errno();
}

int op_truncate(const char* path, off_t size, fuse_file_info* fi) {
  if (fi != nullptr) return ::ftruncate(fh(fi), size) == 0 ? 0 : neg_errno();
  Entry e(path);
  if (e.error()) return e.error();
  int fd = open_for_write(e);
  if (fd < 0) return fd;
  int rc = ::ftruncate(fd, size) == 0 ? 0 : neg_errno();
  ::close(fd);
  return rc;
}

// The flags to open the backing file with: never through a symlink, never O_DIRECT (the
// request buffers FUSE hands us are not aligned for it; FUSE itself honours O_DIRECT).
int backing_flags(int flags) { return (flags & ~O_DIRECT) | O_NOFOLLOW | O_CLOEXEC; }

int op_open(const char* path, fuse_file_info* fi) {
  Entry e(path);
  if (e.error()) return e.error();
  int fd = ::openat(e.dir(), e.name(), backing_flags(fi->flags));
  if (fd < 0) return neg_errno();
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int op_create(const char* path, mode_t mode, fuse_file_info* fi) {
  Entry e(path);
  if (e.error()) return e.error();
  int flags = backing_flags(fi->flags) | O_CREAT;
  // O_EXCL first, to know whether this call made the file: only a new file is given to
  // the caller, never one that was there already.
  int fd = ::openat(e.dir(), e.name(), flags | O_EXCL, mode);
  bool created = fd >= 0;
  if (fd < 0 && errno == EEXIST && !(fi->flags & O_EXCL)) {
    fd = ::openat(e.dir(), e.name(), flags & ~O_CREAT);
  }
  if (fd < 0) return neg_errno();
  uid_t uid;
  gid_t gid;
  if (created && owner_for_new(e.dir(), &uid, &gid) && ::fchown(fd, uid, gid) != 0) {
    int err = -errno;
    ::close(fd);
    ::unlinkat(e.dir(), e.name(), 0);
    return err;
  }
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}

int op_read(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fh(fi), buf + done, size - done, off + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return done > 0 ? static_cast<int>(done) : neg_errno();
    if (n == 0) break;  // end of file
    done += static_cast<size_t>(n);
  }
  return static_cast<int>(done);
}

int op_write(const char*, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pwrite(fh(fi), buf + done, size - done, off + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return done > 0 ? static_cast<int>(done) : neg_errno();
    done += static_cast<size_t>(n);
  }
  return static_cast<int>(done);
}

int op_statfs(const char*, struct statvfs* st) {
  return ::fstatvfs(backing().root_fd, st) == 0 ? 0 : neg_errno();
}

// Called at each close() of a descriptor: closing a duplicate makes the backing file system
// do its close-time work (NFS writes back and reports errors there) without losing the fd.
int op_flush(const char*, fuse_file_info* fi) {
  int dup = ::dup(fh(fi));
  if (dup < 0) return neg_errno();
  return ::close(dup) == 0 ? 0 : neg_errno();
}

int op_release(const char*, fuse_file_info* fi) {
  ::close(fh(fi));
  return 0;
}

// A real fsync of the backing file: checkpoints count on it being on disk once it returns.
int op_fsync(const char*, int datasync, fuse_file_info* fi) {
  int rc = datasync ? ::fdatasync(fh(fi)) : ::fsync(fh(fi));
  return rc == 0 ? 0 : neg_errno();
}

// A folder stays open from opendir to releasedir: with nullpath_ok, readdir gets no path.
DIR* dir_of(const fuse_file_info* fi) { return reinterpret_cast<DIR*>(fi->fh); }

int op_opendir(const char* path, fuse_file_info* fi) {
  if (path == nullptr) return -EBADF;
  int fd = open_beneath(backing().root_fd, relative(path), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return fd;
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int err = -errno;
    ::close(fd);
    return err;
  }
  fi->fh = reinterpret_cast<uint64_t>(dir);
  return 0;
}

int op_readdir(const char*, void* buf, fuse_fill_dir_t filler, off_t, fuse_file_info* fi,
               fuse_readdir_flags) {
  DIR* dir = dir_of(fi);
  // Offset 0 to every entry: libfuse keeps the whole listing and pages it out itself, and
  // asks again from the start (after a rewinddir) when it must.
  ::rewinddir(dir);
  while (true) {
    errno = 0;
    dirent* d = ::readdir(dir);
    if (d == nullptr) return errno != 0 ? -errno : 0;
    struct stat st {};
    st.st_ino = d->d_ino;
    st.st_mode = DTTOIF(d->d_type);
    if (filler(buf, d->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) return -ENOMEM;
  }
}

int op_releasedir(const char*, fuse_file_info* fi) {
  ::closedir(dir_of(fi));
  return 0;
}

// A folder's fsync makes a create or rename in it durable (common/fs.h's sync_dir after an
// atomic publish); without this FUSE would answer it with success and do nothing.
int op_fsyncdir(const char*, int datasync, fuse_file_info* fi) {
  int fd = ::dirfd(dir_of(fi));
  int rc = datasync ? ::fdatasync(fd) : ::fsync(fd);
  return rc == 0 ? 0 : neg_errno();
}

// With default_permissions the kernel checks modes itself; this only says whether the
// name exists (the daemon is root, so asking the backing folder would always say yes).
int op_access(const char* path, int) {
  Entry e(path);
  if (e.error()) return e.error();
  struct stat st {};
  return ::fstatat(e.dir(), e.name(), &st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : neg_errno();
}

int op_utimens(const char* path, const timespec tv[2], fuse_file_info* fi) {
  if (fi != nullptr) return ::futimens(fh(fi), tv) == 0 ? 0 : neg_errno();
  Entry e(path);
  if (e.error()) return e.error();
  return ::utimensat(e.dir(), e.name(), tv, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : neg_errno();
}

int op_fallocate(const char* path, int mode, off_t off, off_t len, fuse_file_info* fi) {
  if (fi != nullptr) return ::fallocate(fh(fi), mode, off, len) == 0 ? 0 : neg_errno();
  Entry e(path);
  if (e.error()) return e.error();
  int fd = open_for_write(e);
  if (fd < 0) return fd;
  int rc = ::fallocate(fd, mode, off, len) == 0 ? 0 : neg_errno();
  ::close(fd);
  return rc;
}

fuse_operations make_operations() {
  fuse_operations ops{};
  ops.init = op_init;
  ops.getattr = op_getattr;
  ops.readlink = op_readlink;
  ops.mkdir = op_mkdir;
  ops.unlink = op_unlink;
  ops.rmdir = op_rmdir;
  ops.symlink = op_symlink;
  ops.rename = op_rename;
  ops.link = op_link;
  ops.chmod = op_chmod;
  ops.chown = op_chown;
  ops.truncate = op_truncate;
  ops.open = op_open;
  ops.create = op_create;
  ops.read = op_read;
  ops.write = op_write;
  ops.statfs = op_statfs;
  ops.flush = op_flush;
  ops.release = op_release;
  ops.fsync = op_fsync;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.releasedir = op_releasedir;
  ops.fsyncdir = op_fsyncdir;
  ops.access = op_access;
  ops.utimens = op_utimens;
  ops.fallocate = op_fallocate;
  return ops;
}

}  // namespace

Result<Backing> open_backing(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return make_error("InvalidArgument", "backing folder " + dir + ": " + strerror(errno));
  }
  Backing b;
  b.root_fd = fd;
  b.give_to_caller = ::geteuid() == 0;
  return b;
}

const fuse_operations& passthrough_operations() {
  static const fuse_operations ops = make_operations();
  return ops;
}

}  // namespace endure::fsx
