"""A state dict as the checkpoint engine holds it: one named buffer per tensor (and per
bytes value), and a tree, saved as the rank's metadata, that says what every key holds.

The tree is JSON. Each node is one of
    {"dict": [[key, node], ...]}   {"list": [node, ...]}   {"tuple": [node, ...]}
    {"tensor": BUFFER, "dtype": "float32", "shape": [2, 3]}   {"bytes": BUFFER, "size": N}
    {"int": "123"}  {"float": "0x1.8p+1"}  {"bool": true}  {"str": "..."}  {"none": null}
ints as decimal text and floats as float.hex(), so that every value, NaN and 2**100
included, comes back exactly. A buffer is named by its key path, each key's "%" and "/"
escaped and the keys joined with "/" ("model/0.weight").
"""

import ctypes

FORMAT = 1
TREE = "endure.state"  # the metadata key the tree is saved under

_DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8",
                "int8", "int16", "int32", "int64", "bool")
_PLAIN = (bool, int, float, str, bytes, type(None))


class StateDictError(ValueError):
    """A state dict a checkpoint cannot take, or one that differs from the checkpoint it
    is loaded from. `key` is the offending entry's path, as in state_dict['model']['w']."""

    def __init__(self, path, rule):
        self.key = key_text(path)
        super().__init__("%s: %s" % (self.key, rule))


def key_text(path):
    """The path of keys as Python would index it: state_dict['optim']['state'][0]."""
    return "state_dict" + "".join("[%r]" % k for k in path)


def _buffer_name(path):
    parts = []
    for k in path:
        k = str(k).replace("%", "%25").replace("/", "%2F")
        parts.append(k if k else "%")  # "%" alone: an empty key (escaped ones have 2 digits)
    return "/".join(parts)


def _dtypes():
    import torch
    return {getattr(torch, n): n for n in _DTYPE_NAMES}


def _check_tensor(t, path, dtypes):
    """Where a tensor's bytes are, after the checks that the engine can read them whole."""
    if t.layout != _torch().strided:
        raise StateDictError(path, "a %s tensor: only dense (strided) tensors are saved" % t.layout)
    if t.device.type != "cpu":
        raise StateDictError(path, "on device %s: only CPU tensors are saved (move it with "
                             ".cpu() first)" % t.device)
    if t.dtype not in dtypes:
        raise StateDictError(path, "dtype %s is not supported (supported: %s)"
                             % (t.dtype, ", ".join(_DTYPE_NAMES)))
    if not t.is_contiguous():
        raise StateDictError(path, "not contiguous: save t.contiguous() instead")
    return t.data_ptr(), t.numel() * t.element_size()


def _torch():
    import torch
    return torch


class PlainValues(dict):
    """A dict of plain values (no tensors) that a load replaces whole: its keys become the
    checkpoint's, whichever it had (endure.inplace.AdamW.extra)."""


class Flat:
    """A state dict flattened for a save: `tree` (JSON-ready), the engine's buffer
    descriptions `buffers` (a ctypes array), and `keep`, the objects whose memory they point
    into, to hold while the engine may read them."""

    def __init__(self, tree, buffers, keep):
        self.tree = tree
        self.buffers = buffers
        self.keep = keep


def flatten(state_dict, buffer_type):
    """Flattens state_dict into a Flat whose buffers are buffer_type structures (name,
    data, size). Raises StateDictError naming the first entry it cannot take."""
    torch = _torch()
    dtypes = _dtypes()
    regions, keep = [], []

    def walk(value, path, open_containers):
        if isinstance(value, torch.Tensor):
            ptr, size = _check_tensor(value, path, dtypes)
            name = _buffer_name(path)
            regions.append((name, ptr, size))
            keep.append(value)
            return {"tensor": name, "dtype": dtypes[value.dtype], "shape": list(value.shape)}
        if isinstance(value, (dict, list, tuple)):
            if id(value) in open_containers:
                raise StateDictError(path, "contains itself")
            open_containers.add(id(value))
            try:
                if isinstance(value, dict):
                    items = []
                    for k, v in value.items():
                        if type(k) is not str:
                            raise StateDictError(path + [k], "key %r is a %s; keys must be strings"
                                                 % (k, type(k).__name__))
                        if not _encodes(k):
                            raise StateDictError(path + [k], "a key that is not valid Unicode text")
                        items.append([k, walk(v, path + [k], open_containers)])
                    return {"dict": items}
                kind = "list" if isinstance(value, list) else "tuple"
                if type(value) not in (list, tuple):
                    raise StateDictError(path, "a %s: only plain lists and tuples are saved"
                                         % type(value).__name__)
                return {kind: [walk(v, path + [i], open_containers) for i, v in enumerate(value)]}
            finally:
                open_containers.discard(id(value))
        if type(value) is bytes:
            name = _buffer_name(path)
            regions.append((name, _bytes_address(value), len(value)))
            keep.append(value)
            return {"bytes": name, "size": len(value)}
        if type(value) is bool:
            return {"bool": value}
        if type(value) is int:
            return {"int": str(value)}
        if type(value) is float:
            return {"float": value.hex()}
        if type(value) is str:
            if not _encodes(value):
                raise StateDictError(path, "a str that is not valid Unicode text")
            return {"str": value}
        if value is None:
            return {"none": None}
        raise StateDictError(path, "a %s is not something a checkpoint holds (tensors, dicts, "
                             "lists, tuples, int, float, bool, str, bytes, None)"
                             % type(value).__name__)

    if not isinstance(state_dict, dict):
        raise StateDictError([], "a %s; a checkpoint takes a dict" % type(state_dict).__name__)
    tree = walk(state_dict, [], set())
    if not regions:
        # The engine saves at least one buffer: a state of plain values alone gets an empty one.
        regions.append(("endure.empty", None, 0))
    buffers = (buffer_type * len(regions))()
    for i, (name, ptr, size) in enumerate(regions):
        buffers[i].name = name.encode("utf-8")
        buffers[i].data = ptr
        buffers[i].size = size
    return Flat(tree, buffers, keep)


def _encodes(text):
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _bytes_address(b):
    # The address of a bytes object's own storage: no copy is made.
    return ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value if b else None


def plan_load(state_dict, tree, step):
    """Matches state_dict against a step's tree before anything is written. Returns
    (regions, finish): regions are (name, address, size) the engine fills (each tensor's own
    memory, a fresh bytearray per bytes value), and finish() puts the plain values into
    state_dict once the load succeeded. Raises StateDictError naming the first key whose
    kind, dtype or shape differs, or that only one side has."""
    torch = _torch()
    dtypes = _dtypes()
    regions = []

    def differs(path, rule):
        return StateDictError(path, "%s (step %d)" % (rule, step))

    def match(value, node, path):
        """A function giving the value once loaded (the same object for tensors, dicts and
        lists, which are filled in place)."""
        kind = next(iter(node))
        if kind == "tensor":
            if not isinstance(value, torch.Tensor):
                raise differs(path, "the checkpoint holds a tensor here, the state dict a %s"
                              % type(value).__name__)
            ptr, size = _check_tensor(value, path, dtypes)
            if dtypes[value.dtype] != node["dtype"]:
                raise differs(path, "dtype %s here, %s in the checkpoint"
                              % (dtypes[value.dtype], node["dtype"]))
            if list(value.shape) != node["shape"]:
                raise differs(path, "shape %s here, %s in the checkpoint"
                              % (list(value.shape), node["shape"]))
            regions.append((node["tensor"], ptr, size))
            return lambda: value
        if isinstance(value, torch.Tensor):
            raise differs(path, "the state dict holds a tensor here, the checkpoint a %s" % kind)
        if kind == "dict":
            if not isinstance(value, dict):
                raise differs(path, "the checkpoint holds a dict here, the state dict a %s"
                              % type(value).__name__)
            saved = dict(node["dict"])
            if isinstance(value, PlainValues):
                for k, n in saved.items():
                    if next(iter(n)) in ("tensor", "dict", "list", "tuple"):
                        raise differs(path + [k], "not a plain value")
                plain = {k: match(None, n, path + [k]) for k, n in saved.items()}

                def fill_plain():
                    value.clear()
                    value.update((k, f()) for k, f in plain.items())
                    return value
                return fill_plain
            for k in value:
                if k not in saved:
                    raise differs(path + [k], "in the state dict, not in the checkpoint")
            for k in saved:
                if k not in value:
                    raise differs(path + [k], "in the checkpoint, not in the state dict")
            fills = [(k, match(value[k], saved[k], path + [k])) for k in saved]

            def fill_dict():
                for k, f in fills:
                    value[k] = f()
                return value
            return fill_dict
        if kind in ("list", "tuple"):
            want = list if kind == "list" else tuple
            if type(value) is not want:
                raise differs(path, "the checkpoint holds a %s here, the state dict a %s"
                              % (kind, type(value).__name__))
            if len(value) != len(node[kind]):
                raise differs(path, "%d items here, %d in the checkpoint"
                              % (len(value), len(node[kind])))
            fills = [match(v, n, path + [i]) for i, (v, n) in enumerate(zip(value, node[kind]))]
            if kind == "tuple":
                return lambda: tuple(f() for f in fills)

            def fill_list():
                for i, f in enumerate(fills):
                    value[i] = f()
                return value
            return fill_list
        if isinstance(value, (dict, list, tuple)):
            raise differs(path, "the state dict holds a %s here, the checkpoint a %s"
                          % (type(value).__name__, kind))
        if kind == "bytes":
            data = bytearray(node["size"])
            address = None
            if data:
                address = ctypes.addressof((ctypes.c_char * len(data)).from_buffer(data))
            regions.append((node["bytes"], address, len(data)))
            return lambda: bytes(data)
        decoded = _plain(node, kind, path, step)
        return lambda: decoded

    if not isinstance(state_dict, dict):
        raise StateDictError([], "a %s; a checkpoint loads into a dict" % type(state_dict).__name__)
    if "dict" not in tree:
        raise StateDictError([], "step %d holds no state dict endure.checkpoint saved" % step)
    finish = match(state_dict, tree, [])
    if not regions:
        regions.append(("endure.empty", None, 0))
    return regions, finish


def _plain(node, kind, path, step):
    v = node[kind]
    if kind == "int":
        return int(v)
    if kind == "float":
        return float.fromhex(v)
    if kind in ("bool", "str"):
        return v
    if kind == "none":
        return None
    raise StateDictError(path, "step %d holds a %r, which this version does not know"
                         % (step, kind))
