"""libendure.so's checkpoint C API (include/endure/checkpoint_c.h) through ctypes.

The library is found, and its functions declared, on first use rather than at import, so
`import endure` works on a machine without it. Where it is looked for, in order:

  1. $ENDURE_LIBRARY, a path to libendure.so (tests point it at their build);
  2. the build tree beside this package's source (python/endure -> build/libendure.so),
     which is where scripts/setup.sh leaves it;
  3. /opt/endure/lib/libendure.so.0, the node software of an endure cluster;
  4. the dynamic loader's own search (the .deb's /usr/lib/<arch>/libendure.so.0).
"""

import ctypes
import os
import threading

# endure_ckpt_status, as checkpoint_c.h numbers them.
OK, EINVAL, EIO, ENOTFOUND, ECORRUPT, ETIMEOUT, EOTHER = range(7)
STATUS_NAMES = {EINVAL: "EINVAL", EIO: "EIO", ENOTFOUND: "ENOTFOUND", ECORRUPT: "ECORRUPT",
                ETIMEOUT: "ETIMEOUT", EOTHER: "EOTHER"}


class CheckpointError(Exception):
    """A call into the checkpoint engine failed. `code` is the C API's status name
    ("EINVAL", "EIO", "ENOTFOUND", "ECORRUPT", "ETIMEOUT" or "EOTHER"); the message is the
    engine's, naming the field or file."""

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message) if message else code)
        self.code = code


class Buffer(ctypes.Structure):
    """endure_ckpt_buffer: a named region the engine reads."""
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class Target(ctypes.Structure):
    """endure_ckpt_target: a named region a load fills."""
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class Options(ctypes.Structure):
    """endure_ckpt_options, field for field (zero means "none" or "the default")."""
    _fields_ = [("dir", ctypes.c_char_p), ("local_dir", ctypes.c_char_p),
                ("memory_dir", ctypes.c_char_p), ("rank", ctypes.c_int), ("world", ctypes.c_int),
                ("keep_last", ctypes.c_int), ("keep_every", ctypes.c_int),
                ("commit_timeout_seconds", ctypes.c_double), ("s3", ctypes.c_char_p),
                ("disk_duty", ctypes.c_double), ("cluster_node", ctypes.c_char_p),
                ("cluster_rank_nodes", ctypes.c_char_p), ("cluster_replicas", ctypes.c_int),
                ("cluster_config_dir", ctypes.c_char_p)]


_HERE = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_lib = None


def candidates():
    """The paths tried for libendure.so, in order (see the module's docstring)."""
    paths = []
    if os.environ.get("ENDURE_LIBRARY"):
        paths.append(os.environ["ENDURE_LIBRARY"])
    repo = os.path.dirname(os.path.dirname(_HERE))
    paths.append(os.path.join(repo, "build", "libendure.so"))
    paths.append("/opt/endure/lib/libendure.so.0")
    paths.append("libendure.so.0")
    return paths


def _declare(lib):
    c_ckpt = ctypes.c_void_p
    i64p = ctypes.POINTER(ctypes.c_int64)
    sigs = {
        "endure_ckpt_open_with": [ctypes.POINTER(Options), ctypes.POINTER(c_ckpt)],
        "endure_ckpt_save": [c_ckpt, ctypes.c_int64, ctypes.POINTER(Buffer), ctypes.c_size_t,
                             ctypes.c_char_p],
        "endure_ckpt_save_overlapped": [c_ckpt, ctypes.c_int64, ctypes.POINTER(Buffer),
                                        ctypes.c_size_t, ctypes.c_char_p],
        "endure_ckpt_save_overlapped_memory": [c_ckpt, ctypes.c_int64, ctypes.POINTER(Buffer),
                                               ctypes.c_size_t, ctypes.c_char_p],
        "endure_ckpt_wait_copied": [c_ckpt],
        "endure_ckpt_wait": [c_ckpt],
        "endure_ckpt_flush": [c_ckpt],
        "endure_ckpt_latest": [c_ckpt, i64p],
        "endure_ckpt_load_into": [c_ckpt, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, i64p],
        "endure_ckpt_next_state": [c_ckpt, ctypes.POINTER(ctypes.c_char_p),
                                   ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
                                   ctypes.POINTER(ctypes.c_void_p)],
        "endure_ckpt_save_in_place": [c_ckpt, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int],
    }
    for name, argtypes in sigs.items():
        f = getattr(lib, name)
        f.argtypes = argtypes
        f.restype = ctypes.c_int
    lib.endure_ckpt_close.argtypes = [c_ckpt]
    lib.endure_ckpt_close.restype = None
    lib.endure_ckpt_disk_busy.argtypes = [c_ckpt]
    lib.endure_ckpt_disk_busy.restype = ctypes.c_int
    lib.endure_ckpt_last_error.argtypes = [c_ckpt]
    lib.endure_ckpt_last_error.restype = ctypes.c_char_p
    return lib


def lib():
    """The loaded library, its functions declared. Raises OSError naming every path tried
    when none loads (or when one lacks a function this package calls: an older build)."""
    global _lib
    with _lock:
        if _lib is None:
            tried = []
            for path in candidates():
                if os.path.isabs(path) and not os.path.exists(path):
                    tried.append("%s (no such file)" % path)
                    continue
                try:
                    _lib = _declare(ctypes.CDLL(path))
                    break
                except (OSError, AttributeError) as e:
                    tried.append("%s (%s)" % (path, e))
            if _lib is None:
                raise OSError("endure: libendure.so not found or too old; tried: " +
                              "; ".join(tried) + ". Build it (scripts/setup.sh) or set "
                              "ENDURE_LIBRARY to its path")
        return _lib


def check(status, handle=None):
    """Raises CheckpointError for a status other than OK, with the handle's last error (or,
    for an open, this thread's)."""
    if status != OK:
        text = lib().endure_ckpt_last_error(handle)
        raise CheckpointError(STATUS_NAMES.get(status, str(status)),
                              text.decode("utf-8", "replace") if text else "")
