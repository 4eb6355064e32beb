# tokenvault — see README.md. Quick start: `make demo`, `make test`.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man/man1
BASHDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHDIR ?= $(PREFIX)/share/zsh/site-functions
FISHDIR ?= $(PREFIX)/share/fish/vendor_completions.d
SYSTEMDUSERDIR ?= $(PREFIX)/lib/systemd/user
DOCDIR ?= $(PREFIX)/share/doc/tokenvault
# libstdc++ (the Swift runtime's and TOMLKit's C++) is linked statically too:
# loading the shared one cost every run ~0.4 ms before main. Every -lstdc++ on
# the link line finds libstdc++.a first in STATIC_CXX; nothing tokenvault
# dlopens uses libstdc++.
STATIC_CXX = $(CURDIR)/.build/static-cxx
# RELEASE_SCRATCH: where the release is built; another one than .build lets a
# release build run while something else holds .build (the tests' make deb).
RELEASE_SCRATCH ?= .build
# Linked by GNU ld: relocations resolved and made read-only at start (-z now
# -z relro: no lazy binding table left writable), the 41,000 relative ones
# packed (-z pack-relative-relocs, DT_RELR: a few KiB instead of 1 MiB that
# every run mapped). scripts/relro.ld moves the writable constant data Swift
# emits out of .rodata, which would otherwise leave no RELRO segment. The
# unwinder is linked in (libgcc_eh): no libgcc_s to load. Nothing is
# exported (--no-export-dynamic: SwiftPM exports every symbol of an
# executable; nothing loads one from it). docs/benchmarks.md, "Compact
# relative relocations". Each function in a section of its own, and those a
# get runs (scripts/hot-text.ld, written by make hot-text) linked first and
# together: docs/benchmarks.md, "The code a get runs, together".
HOT_TEXT ?= $(CURDIR)/scripts/hot-text.ld
RELEASE_FLAGS = -c release --static-swift-stdlib --product tokenvault -Xlinker -L$(STATIC_CXX) \
	-Xswiftc -use-ld=bfd -Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro \
	-Xlinker -z -Xlinker pack-relative-relocs -Xlinker -T -Xlinker $(CURDIR)/scripts/relro.ld -Xlinker -lgcc_eh -Xlinker --no-export-dynamic \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xlinker -T -Xlinker $(HOT_TEXT) \
	--scratch-path $(RELEASE_SCRATCH)
# What SwiftPM linked is left as it linked it (a file changed after the link
# is linked again by the next build, so make deb relinked every time): the
# binary patched for release is a copy beside it, made again only when the
# link is newer.
RELEASE_BUILT = $(RELEASE_SCRATCH)/release/tokenvault
RELEASE_BIN = $(RELEASE_SCRATCH)/tokenvault

.PHONY: deps build release release-patch demo-identity test unit lint format demo bench hot-text deb install uninstall docs clean

# What each target installs (scripts/deps.sh): build and release only what
# compiling needs; deb adds the packaging tools; demo the local provider;
# test everything the tests drive.
deps:
	@scripts/deps.sh test

build:
	@scripts/deps.sh build
	swift build

release:
	@scripts/deps.sh build
	@mkdir -p $(STATIC_CXX) && ln -sf "$$(gcc -print-file-name=libstdc++.a)" $(STATIC_CXX)/libstdc++.a
	swift build $(RELEASE_FLAGS)
	@if [ $(RELEASE_BIN) -nt $(RELEASE_BUILT) ]; then echo "release: $(RELEASE_BIN) is up to date"; else $(MAKE) --no-print-directory release-patch RELEASE_SCRATCH=$(RELEASE_SCRATCH) HOT_TEXT=$(HOT_TEXT); fi

# The copy of the link, checked and patched (see RELEASE_BIN).
release-patch:
	cp $(RELEASE_BUILT) $(RELEASE_BIN).tmp
	@if readelf -d $(RELEASE_BIN).tmp | grep -q 'libstdc++'; then echo "release: libstdc++ is linked dynamically" >&2; exit 1; fi
	@if ! readelf -lW $(RELEASE_BIN).tmp | grep -q GNU_RELRO; then echo "release: no RELRO segment" >&2; exit 1; fi
	@if [ "$(HOT_TEXT)" = "$(CURDIR)/scripts/hot-text.ld" ] && ! readelf -SW $(RELEASE_BIN).tmp | grep -q ' \.text\.hot '; then \
	  echo "release: no .text.hot (scripts/hot-text.ld)" >&2; exit 1; fi
	@if [ "$(HOT_TEXT)" = "$(CURDIR)/scripts/hot-text.ld" ]; then scripts/hot-text.sh --check $(RELEASE_BIN).tmp; fi
	@# libsecret and GLib are opened with dlopen when the Secret Service is first
	@# used, libcurl when a provider is first asked (Sources/CTokenVault: one
	@# shared loader): only their headers are used (Package.swift), so that a
	@# `get` of a valid token never loads them.
	@if readelf -d $(RELEASE_BIN).tmp | grep -qE 'NEEDED.*lib(secret|glib|gio|gobject|curl)'; then \
	  echo "release: libsecret, GLib or libcurl is linked; they are opened on first use" >&2; exit 1; fi
	@# SwiftPM adds RUNPATH=$$ORIGIN: a copy run from /tmp would load a library planted beside it.
	patchelf --remove-rpath $(RELEASE_BIN).tmp
	mv $(RELEASE_BIN).tmp $(RELEASE_BIN)

# The tests start their own private D-Bus with an unlocked gnome-keyring
# (one per test class) and their own throwaway homes. scripts/run-tests.sh
# runs each class in a process of its own, TEST_WORKERS (6) at a time, and
# ends with a summary naming every failure and the wall time.
# REPEAT=N runs the suite N times on one build and lists every test that
# failed in any run with its count; TESTS='AgentTests|MCP' runs only the
# classes the pattern names (docs/hacking.md, "Flaky tests").
REPEAT ?= 1
TESTS ?=
# Lint first, so drift fails before the long part; then the packages; then the
# build, while the MCP Python SDK's venv is made beside it (pip waits on the
# package index more than it computes).
test: lint
	@scripts/deps.sh test --no-venv
	@scripts/deps.sh venv & venv=$$!; swift build --build-tests; built=$$?; wait $$venv && exit $$built
	@REPEAT=$(REPEAT) scripts/run-tests.sh "$(TESTS)"

# The library's tests alone (docs/hacking.md): no packages installed, no
# services started; the fast loop. The one library test that needs the MCP
# SDK's server is left to make test.
unit:
	swift build --build-tests
	swift test --skip-build --disable-swift-testing --filter TokenVaultKitTests --skip ResourceDiscoveryTests

# The formatter ships with the toolchain; .swift-format is its configuration.
# `make test` lints first, so drift fails before the long part.
lint:
	swift format lint --strict --recursive --parallel Sources Tests Package.swift

format:
	swift format format --in-place --recursive --parallel Sources Tests Package.swift

demo: release
	@scripts/deps.sh demo
	scripts/demo.sh $(RELEASE_BIN)

# Credentials from an identity (docs/providers.md): a workload's JWT and a token
# exchange against the local provider, in a throwaway home.
demo-identity: release
	@scripts/deps.sh demo
	scripts/demo-identity.sh $(RELEASE_BIN)

bench: release
	@scripts/deps.sh bench
	RELEASE_FLAGS="$(RELEASE_FLAGS)" scripts/bench.sh $(RELEASE_BIN)

# scripts/hot-text.ld from a release linked without it, profiled by valgrind
# (which names no function outside .text): after a change to what a get
# runs. The next make release links by it.
hot-text:
	@scripts/deps.sh hot
	@mkdir -p .build/hot-profile && printf 'SECTIONS { .text.hot : { } } INSERT BEFORE .text;\n' > .build/hot-profile/none.ld
	$(MAKE) release RELEASE_SCRATCH=.build/hot-profile HOT_TEXT=$(CURDIR)/.build/hot-profile/none.ld
	scripts/hot-text.sh .build/hot-profile/tokenvault

# A Debian package in .build/deb/ (scripts/deb.sh): apt install ./.build/deb/tokenvault_*.deb
deb: release
	@scripts/deps.sh deb
	@scripts/deb.sh $(RELEASE_BIN)

install: release
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)" "$(DESTDIR)$(BASHDIR)" "$(DESTDIR)$(ZSHDIR)" "$(DESTDIR)$(FISHDIR)"
	install -m 0755 $(RELEASE_BIN) "$(DESTDIR)$(BINDIR)/tokenvault"
	install -m 0644 man/tokenvault.1 "$(DESTDIR)$(MANDIR)/tokenvault.1"
	install -m 0644 completions/tokenvault.bash "$(DESTDIR)$(BASHDIR)/tokenvault"
	install -m 0644 completions/_tokenvault "$(DESTDIR)$(ZSHDIR)/_tokenvault"
	install -m 0644 completions/tokenvault.fish "$(DESTDIR)$(FISHDIR)/tokenvault.fish"
	install -d "$(DESTDIR)$(DOCDIR)"
	install -m 0644 README.md docs/*.md "$(DESTDIR)$(DOCDIR)/"
	install -d "$(DESTDIR)$(SYSTEMDUSERDIR)"
	install -m 0644 contrib/systemd/tokenvault-agent.socket "$(DESTDIR)$(SYSTEMDUSERDIR)/tokenvault-agent.socket"
	sed 's|@BINDIR@|$(BINDIR)|' contrib/systemd/tokenvault-agent.service > "$(DESTDIR)$(SYSTEMDUSERDIR)/tokenvault-agent.service"
	chmod 0644 "$(DESTDIR)$(SYSTEMDUSERDIR)/tokenvault-agent.service"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/tokenvault" "$(DESTDIR)$(MANDIR)/tokenvault.1" "$(DESTDIR)$(BASHDIR)/tokenvault" \
	      "$(DESTDIR)$(ZSHDIR)/_tokenvault" "$(DESTDIR)$(FISHDIR)/tokenvault.fish" \
	      "$(DESTDIR)$(SYSTEMDUSERDIR)/tokenvault-agent.socket" "$(DESTDIR)$(SYSTEMDUSERDIR)/tokenvault-agent.service"
	rm -rf "$(DESTDIR)$(DOCDIR)"

# Regenerates the completions and the man page from the argument parser
# (Sources/tokenvault-manual renders its description of every command, plus
# EXIT STATUS, ENVIRONMENT, FILES and EXAMPLES from TokenVaultCLI/ManualText).
docs: build
	.build/debug/tokenvault --generate-completion-script bash > completions/tokenvault.bash
	.build/debug/tokenvault --generate-completion-script zsh > completions/_tokenvault
	.build/debug/tokenvault --generate-completion-script fish > completions/tokenvault.fish
	.build/debug/tokenvault-manual > man/tokenvault.1.new && mv man/tokenvault.1.new man/tokenvault.1

clean:
	rm -rf .build
