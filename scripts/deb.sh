#!/usr/bin/env bash
# `make deb`: tokenvault_VERSION-1_ARCH.deb in .build/deb/, with Debian's own
# tools (dpkg-shlibdeps for the libraries the binary links, dpkg-deb to build),
# from the release build. Usage: scripts/deb.sh [BINARY]
# Prints the path of the package it built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/.build/release/tokenvault}
version=$("$bin" --version)
arch=$(dpkg --print-architecture)
out=$root/.build/deb
stage=$out/tokenvault_${version}-1_${arch}
rm -rf "$stage" "$out/shlibs"
mkdir -p "$stage/DEBIAN" "$out/shlibs/debian"

# The files, where Debian's tools and shells look.
install -D -m 0755 "$bin" "$stage/usr/bin/tokenvault"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/tokenvault"
install -d "$stage/usr/share/man/man1"
gzip -9n < "$root/man/tokenvault.1" > "$stage/usr/share/man/man1/tokenvault.1.gz"
# bash-completion sources the file: no #! line.
install -d "$stage/usr/share/bash-completion/completions"
sed '1{/^#!/d}' "$root/completions/tokenvault.bash" > "$stage/usr/share/bash-completion/completions/tokenvault"
chmod 0644 "$stage/usr/share/bash-completion/completions/tokenvault"
install -D -m 0644 "$root/completions/_tokenvault" "$stage/usr/share/zsh/vendor-completions/_tokenvault"
install -D -m 0644 "$root/completions/tokenvault.fish" "$stage/usr/share/fish/vendor_completions.d/tokenvault.fish"
install -D -m 0644 "$root/contrib/systemd/tokenvault-agent.socket" "$stage/usr/lib/systemd/user/tokenvault-agent.socket"
sed 's|@BINDIR@|/usr/bin|' "$root/contrib/systemd/tokenvault-agent.service" > "$stage/usr/lib/systemd/user/tokenvault-agent.service"
chmod 0644 "$stage/usr/lib/systemd/user/tokenvault-agent.service"
doc=$stage/usr/share/doc/tokenvault
install -d "$doc"
cat > "$doc/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tokenvault
Source: the tokenvault source tree

Files: *
Copyright: 2026 the tokenvault developers
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License. You may obtain a copy
 of the License at
 .
 http://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 License for the specific language governing permissions and limitations
 under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0 can
 be found in "/usr/share/common-licenses/Apache-2.0".
EOF
cat > "$out/changelog" <<EOF
tokenvault (${version}-1) unstable; urgency=medium

  * Built from the source tree by make deb.

 -- tokenvault developers <tokenvault@users.noreply.github.com>  $(date -R -d @"${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}")
EOF
gzip -9n < "$out/changelog" > "$doc/changelog.Debian.gz"
# The guides --help points to: the README and docs/, compressed above 4 KiB as
# Debian's policy asks (zless reads them).
for f in "$root/README.md" "$root"/docs/*.md; do
  if [ "$(stat -c %s "$f")" -gt 4096 ]; then
    gzip -9n < "$f" > "$doc/$(basename "$f").gz"
    chmod 0644 "$doc/$(basename "$f").gz"
  else
    install -m 0644 "$f" "$doc/"
  fi
done
# Built from the tree, never uploaded to Debian: no bug for the upload to close.
install -d "$stage/usr/share/lintian/overrides"
echo "tokenvault: initial-upload-closes-no-bugs" > "$stage/usr/share/lintian/overrides/tokenvault"
chmod 0644 "$stage/usr/share/lintian/overrides/tokenvault"
find "$stage" -type d -exec chmod 0755 {} +

# What the binary links (dpkg-shlibdeps), and what it opens on first use:
# libcurl for every exchange with a provider (Depends: a login or a refresh
# cannot happen without it), libsecret for the Secret Service, libpwquality
# for judging a new passphrase and libqrencode for the device flow's QR code
# (Recommends: the file vault and everything else work without them); the
# TPM2 software stack only for a vault key sealed by the TPM (Suggests).
cat > "$out/shlibs/debian/control" <<'EOF'
Source: tokenvault

Package: tokenvault
Architecture: any
EOF
linked=$(cd "$out/shlibs" && dpkg-shlibdeps -O -e"$stage/usr/bin/tokenvault" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
# The glibc the binary needs, from its own version references: the newest
# GLIBC_x.y it names, and glibc 2.36 for packed relative relocations
# (GLIBC_ABI_DT_RELR), which dpkg-shlibdeps does not know. The libc6 bound
# is raised to it; the build fails if the control file still says less
# (a loader older than that refuses the binary).
needed=$(readelf -VW "$stage/usr/bin/tokenvault" | sed -n 's/.*Name: GLIBC_\([0-9][0-9.]*\).*/\1/p; s/.*Name: GLIBC_ABI_DT_RELR.*/2.36/p' | sort -V | tail -1)
[ -n "$needed" ] || { echo "deb: no GLIBC version reference in the binary" >&2; exit 1; }
bound=$(sed -n 's/.*libc6 (>= \([^)]*\)).*/\1/p' <<<"$linked")
if [ -z "$bound" ]; then
  linked="libc6 (>= $needed), $linked"
elif dpkg --compare-versions "$bound" lt "$needed"; then
  linked=$(sed "s/libc6 (>= [^)]*)/libc6 (>= $needed)/" <<<"$linked")
fi
bound=$(sed -n 's/.*libc6 (>= \([^)]*\)).*/\1/p' <<<"$linked")
if ! dpkg --compare-versions "$bound" ge "$needed"; then
  echo "deb: Depends says libc6 (>= $bound), the binary needs glibc $needed" >&2
  exit 1
fi
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<EOF
Package: tokenvault
Version: ${version}-1
Architecture: ${arch}
Maintainer: tokenvault developers <tokenvault@users.noreply.github.com>
Installed-Size: ${size}
Depends: ${linked}, libcurl4
Recommends: libsecret-1-0, libpwquality1, libqrencode4
Suggests: gnome-keyring, libtss2-esys-3.0.2-0, libtss2-tctildr0, libtss2-tcti-device0
Section: utils
Priority: optional
Description: command-line vault for OAuth credentials
 tokenvault keeps OAuth 2.0 and OAuth 1.0a credentials per API host in the
 freedesktop Secret Service, or in a file encrypted with libsodium, and
 prints a token for shell scripts, refreshed before it expires by one
 process however many ask at once. It logs in with PKCE, the device flow
 or paste mode, serves git, kubectl and mail clients, and bridges MCP
 servers for MCP clients.
EOF
# Agents of the packaged binary (started on use, by hand or by systemd) leave
# before it is replaced or removed: an agent of the old build must not serve
# on, nor cache a key again (docs/agent.md, "Upgrades"). The user's
# credentials are theirs: removing the package never touches them.
cat > "$stage/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
case "$1" in
remove|upgrade|deconfigure)
    if command -v pgrep >/dev/null 2>&1; then
        for pid in $(pgrep -f '^(/usr/bin/)?tokenvault agent( |$)' || true); do
            if [ "$(readlink "/proc/$pid/exe" 2>/dev/null || true)" = /usr/bin/tokenvault ]; then
                kill -TERM "$pid" 2>/dev/null || true
            fi
        done
    fi
    ;;
esac
exit 0
EOF
cat > "$stage/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
case "$1" in
remove|purge)
    echo "tokenvault: stored credentials are kept (the Secret Service, or ~/.local/share/tokenvault/vault); delete them with tokenvault delete before removing it, or by hand"
    ;;
esac
if [ "$1" = purge ] && command -v deb-systemd-helper >/dev/null 2>&1; then
    deb-systemd-helper --user purge tokenvault-agent.socket tokenvault-agent.service >/dev/null 2>&1 || true
fi
exit 0
EOF
chmod 0755 "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"
# What dpkg --verify checks the installed files against.
(cd "$stage" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"
package=$out/tokenvault_${version}-1_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$package" >/dev/null
echo "$package"
