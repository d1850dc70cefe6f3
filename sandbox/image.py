"""Build the sandbox image: `ensure_image()` returns its tag, building it only when missing.

The tag carries a hash of the inputs (Dockerfile and the runner files), so a changed runner
gets a new image. Two routes, chosen automatically:
- a registry answers: `docker build` of sandbox/Dockerfile (FROM python:3.11-slim);
- no registry (pulls fail at once): a Debian root filesystem from `debootstrap` (minbase +
  the full python3 package: solutions import hashlib, fractions, ... which python3-minimal
  lacks), `docker import`ed once as a base image, with the runner files added on top.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from typing import Any

from sandbox.verdict import SandboxUnavailable

REPOSITORY = "coopcode-sandbox"
BASE_REPOSITORY = "coopcode-sandbox-base"
HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER_FILES = ("runner.py", "supervise.py", "judge.py", "child.py", "zygote.py",
                "runner_procs.py", "confine.py", "wire.py", "pyenv.py")
# The offline recipe; part of the base image's tag so a changed recipe rebuilds it.
DEBOOTSTRAP = ["debootstrap", "--variant=minbase", "--include=python3", "bookworm"]
OFFLINE_TAIL = """
COPY {files} /opt/coopcode/
RUN python3 -m compileall -q /opt/coopcode && mkdir -p -m 1777 /work
ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
USER 65534:65534
WORKDIR /work
CMD ["python3", "-I", "-B", "-S", "/opt/coopcode/runner.py", "--docker"]
"""

Progress = Callable[[str], None]


def _hash(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "big") + p)
    return h.hexdigest()[:12]


def image_tag() -> str:
    """coopcode-sandbox:<hash of Dockerfile, offline recipe and runner files>."""
    parts = [open(os.path.join(HERE, "Dockerfile"), "rb").read(), OFFLINE_TAIL.encode(),
             " ".join(DEBOOTSTRAP).encode()]
    for name in RUNNER_FILES:
        parts += [name.encode(), open(os.path.join(HERE, name), "rb").read()]
    return f"{REPOSITORY}:{_hash(*parts)}"


def base_tag() -> str:
    return f"{BASE_REPOSITORY}:{_hash(' '.join(DEBOOTSTRAP).encode())}"


def client() -> Any:
    try:
        import docker
    except ImportError:
        raise SandboxUnavailable("the `docker` Python package is missing: pip install docker, "
                                 "or use --sandbox process") from None
    try:
        c = docker.from_env(timeout=30)
        c.ping()
    except Exception as e:
        raise SandboxUnavailable(
            f"no Docker daemon answers ({_first_line(e)}): start dockerd or use --sandbox process"
        ) from None
    return c


def image_present(tag: str, docker_client: Any = None) -> bool:
    import docker

    try:
        (docker_client or client()).images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_image(progress: Progress | None = None, docker_client: Any = None) -> str:
    """Return the sandbox image's tag, building it first if it is missing. Idempotent."""
    say = progress or (lambda _msg: None)
    dc = docker_client or client()
    tag = image_tag()
    if image_present(tag, dc):
        return tag
    say(f"building sandbox image {tag} (once) ...")
    try:
        _build(dc, tag, _context(open(os.path.join(HERE, "Dockerfile")).read()))
    except Exception as e:
        say(f"registry route failed ({_first_line(e)}); building offline from Debian packages")
        base = ensure_base(dc, say)
        dockerfile = f"FROM {base}\n" + OFFLINE_TAIL.format(files=" ".join(RUNNER_FILES))
        _build(dc, tag, _context(dockerfile))
    say(f"sandbox image {tag} ready")
    _remove_old_images(dc, tag)
    return tag


def _remove_old_images(dc: Any, keep: str) -> None:
    """Older builds of the runner are dead weight; images still used by a container stay."""
    for image in dc.images.list(name=REPOSITORY):
        if keep not in image.tags:
            try:
                dc.images.remove(image.id)
            except Exception:
                pass


def _context(dockerfile: str) -> io.BytesIO:
    """A build context holding only the Dockerfile and the runner files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for name in RUNNER_FILES:
            tar.add(os.path.join(HERE, name), arcname=name)
    buf.seek(0)
    return buf


def _build(dc: Any, tag: str, context: io.BytesIO) -> None:
    import docker

    try:
        dc.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True,
                        labels={"coopcode.sandbox.image": "1"})
    except docker.errors.BuildError as e:
        log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in e.build_log)
        raise RuntimeError(f"{e.msg}: {log.strip()[-300:]}") from None


def ensure_base(dc: Any, say: Progress) -> str:
    """The offline base image: debootstrap a Debian root filesystem and import it."""
    tag = base_tag()
    if image_present(tag, dc):
        return tag
    _ensure_debootstrap(say)
    tmp = tempfile.mkdtemp(prefix="coopcode-rootfs-", dir="/var/tmp")
    rootfs = os.path.join(tmp, "rootfs")
    try:
        say("debootstrap: downloading and unpacking Debian bookworm + python3 (about a minute)")
        run = subprocess.run([*DEBOOTSTRAP, rootfs], capture_output=True, text=True)
        _unmount_under(rootfs)  # debootstrap may leave /proc mounted: never pack the host's
        if run.returncode != 0:
            raise SandboxUnavailable(f"debootstrap failed: {run.stderr.strip()[-300:]}")
        for junk in ("var/cache/apt/archives", "usr/share/doc", "usr/share/man", "usr/share/locale"):
            shutil.rmtree(os.path.join(rootfs, junk), ignore_errors=True)
        say(f"importing the root filesystem as {tag}")
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        repo, version = tag.split(":")
        dc.api.import_image_from_stream(tar.stdout, repository=repo, tag=version)
        if tar.wait() != 0:
            raise SandboxUnavailable("packing the root filesystem failed")
    finally:
        _unmount_under(rootfs)
        shutil.rmtree(tmp, ignore_errors=True)
    if not image_present(tag, dc):
        raise SandboxUnavailable(f"docker import did not produce {tag}")
    return tag


def _ensure_debootstrap(say: Progress) -> None:
    if shutil.which("debootstrap"):
        return
    if os.geteuid() != 0:
        raise SandboxUnavailable("no registry and no debootstrap: install debootstrap (as root) "
                                 "or use --sandbox process")
    say("installing debootstrap (apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "debootstrap"]):
        if subprocess.run(cmd, capture_output=True, env=env).returncode != 0:
            raise SandboxUnavailable(f"{' '.join(cmd)} failed: install debootstrap by hand")


def _unmount_under(path: str) -> None:
    real = os.path.realpath(path)
    with open("/proc/mounts") as f:
        mounts = [line.split()[1] for line in f]
    for m in sorted(mounts, key=len, reverse=True):
        if m == real or m.startswith(real + "/"):
            subprocess.run(["umount", "-l", m], capture_output=True)


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:200]
