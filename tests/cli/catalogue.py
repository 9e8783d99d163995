"""What the two bad-input catalogues share (bad_inputs.py: the CLI; bad_inputs_examples.py: the
example programs): the time limit of one case, the before/after picture of a folder that finds
data loss and litter, and the signs of a crash on stderr. Each catalogue keeps its own table,
runner and summary: their cases and reports differ."""
import hashlib
import os
import stat

TIME_LIMIT = int(os.environ.get("MINIFLOAT_CATALOGUE_TIME_LIMIT", "120"))

# What a sanitizer (ASan + UBSan in CI) prints; any of these is a crash whatever the exit code.
SANITIZER_SIGNS = ("Sanitizer", "runtime error:")


def snapshot(root):
    """path -> (kind, inode, digest) of everything under root (links not followed): the content
    hash of a regular file, the target of a link, "" for anything else."""
    out = {}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(base, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                digest = "->" + os.readlink(p)
            else:
                digest = ""
            out[os.path.relpath(p, root)] = (stat.S_IFMT(st.st_mode), st.st_ino, digest)
    return out


def crashed(returncode, err, signs=()):
    """A signal, a sanitizer report, or one of the caller's own `signs` on stderr."""
    return returncode < 0 or any(s in err for s in SANITIZER_SIGNS + tuple(signs))
