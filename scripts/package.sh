#!/usr/bin/env bash
# Builds the Debian package target/debian/psprobe_VERSION_ARCH.deb: /usr/bin/psprobe, the
# systemd unit psprobe.service, /etc/psprobe/psprobe.toml (a conffile), a man page per command
# and bash/zsh/fish completions (both made by the binary from its clap definitions), and the
# maintainer scripts of packaging/debian. Install it with `apt install ./target/debian/psprobe_*.deb`.
#
#   scripts/package.sh                   # cargo build --release --locked, then the package
#   scripts/package.sh --binary PATH     # package this psprobe binary instead (no build)
#   scripts/package.sh --out DIR         # write the .deb into DIR (default target/debian)
#
# dpkg-deb builds it (no cargo-deb to compile first); dpkg-shlibdeps (dpkg-dev) computes the
# library dependencies. Prints the package's path.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: scripts/package.sh [--binary PATH] [--out DIR]" >&2; exit 2; }
binary="" out=target/debian
while (($#)); do
  case "$1" in
    --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    *) usage ;;
  esac
done
for tool in dpkg-deb dpkg-shlibdeps strip; do
  command -v "$tool" >/dev/null || { echo "package: $tool not found; run scripts/setup.sh (it installs dpkg-dev and binutils)" >&2; exit 1; }
done

if [ -z "$binary" ]; then
  cargo build --release --locked --bin psprobe
  binary="${CARGO_TARGET_DIR:-target}/release/psprobe"
fi
[ -x "$binary" ] || { echo "package: $binary is not an executable psprobe binary" >&2; exit 1; }
# "psprobe 0.1.0 (commit 0123abcd)": the package's version is the binary's.
version="$("$binary" --version | awk '{print $2}')"
arch="$(dpkg --print-architecture)"
[[ "$version" =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || { echo "package: '$binary --version' gave no version ($version)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/DEBIAN"

install -D -m 755 "$binary" "$root/usr/bin/psprobe"
# Debian strips binaries (dh_strip): 10x smaller than the release profile's line tables.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/psprobe"

"$binary" package-assets --out "$work/assets" >/dev/null
for page in "$work"/assets/man/*.1; do
  install -D -m 644 "$page" "$root/usr/share/man/man1/$(basename "$page")"
  gzip -9n "$root/usr/share/man/man1/$(basename "$page")"
done
install -D -m 644 "$work/assets/completions/psprobe.bash" "$root/usr/share/bash-completion/completions/psprobe"
install -D -m 644 "$work/assets/completions/_psprobe" "$root/usr/share/zsh/vendor-completions/_psprobe"
install -D -m 644 "$work/assets/completions/psprobe.fish" "$root/usr/share/fish/vendor_completions.d/psprobe.fish"

# /lib, not /usr/lib: bookworm's packages still ship their units there.
install -D -m 644 packaging/psprobe.service "$root/lib/systemd/system/psprobe.service"
install -D -m 644 packaging/psprobe.toml "$root/etc/psprobe/psprobe.toml"
install -D -m 644 packaging/credentials.conf "$root/usr/share/doc/psprobe/examples/credentials.conf"
install -D -m 644 packaging/copyright "$root/usr/share/doc/psprobe/copyright"
for script in postinst prerm postrm; do
  install -m 755 "packaging/debian/$script" "$root/DEBIAN/$script"
done
echo /etc/psprobe/psprobe.toml >"$root/DEBIAN/conffiles"

# dpkg-shlibdeps wants a source package's debian/control to read; a stub serves.
mkdir -p "$work/src/debian"
printf 'Source: psprobe\n\nPackage: psprobe\nArchitecture: any\n' >"$work/src/debian/control"
shlibs="$(cd "$work/src" && dpkg-shlibdeps -O "$root/usr/bin/psprobe" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')"
[ -n "$shlibs" ] || { echo "package: dpkg-shlibdeps found no library dependencies of psprobe" >&2; exit 1; }

(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
cat >"$root/DEBIAN/control" <<EOF
Package: psprobe
Version: $version
Architecture: $arch
Maintainer: psprobe developers <packaging@psprobe.invalid>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $shlibs, adduser
Section: database
Priority: optional
Description: MySQL proxy that measures what performance_schema costs
 psprobe is a transparent MySQL / MariaDB wire-protocol proxy. Clients connect to it
 instead of mysqld; it forwards every byte unchanged, times every command from the
 client's side, groups statements by digest and exports Prometheus metrics. Its
 controller switches performance_schema settings on the server by scenario and
 reports what each costs the workload, with confidence intervals.
 .
 This package runs it as a systemd service (psprobe.service) configured by
 /etc/psprobe/psprobe.toml.
EOF

# Timestamps from the commit, so the same tree gives the same package.
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && commit_time="$(git log -1 --format=%ct 2>/dev/null)"; then
  export SOURCE_DATE_EPOCH="$commit_time"
fi
mkdir -p "$out"
deb="$out/psprobe_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
