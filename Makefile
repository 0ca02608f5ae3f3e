# SPDX-License-Identifier: GPL-2.0
#
# `make` builds bftrace.ko for the running kernel, or for KDIR=<build dir>.
# The user-space tools and the tests have their own makefiles; this one
# ties them together and installs:
#
#   make install [PREFIX=/usr/local] [DESTDIR=]   bfctl, bfcollector, bfhq,
#       their man pages and <linux/bftrace.h>; `make uninstall` removes them.
#   make dkms-install [DESTDIR=] [DKMS_KERNELS="$(uname -r)"]   the module's
#       sources into /usr/src/bftrace-$(VERSION); with no DESTDIR, also
#       dkms add, build and install for each of DKMS_KERNELS.
#       `make dkms-uninstall` undoes it.

KDIR ?= /lib/modules/$(shell uname -r)/build
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# bfhq --http finds its page in ../share/bftrace/www from its binary
WWWDIR ?= $(PREFIX)/share/bftrace/www
INCLUDEDIR ?= $(PREFIX)/include
DKMS_KERNELS ?= $(shell uname -r)

# dkms.conf holds the one version number, so DKMS and the source directory
# name cannot disagree.
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' $(CURDIR)/dkms.conf 2>/dev/null)
DKMS_SRC = $(DESTDIR)/usr/src/bftrace-$(VERSION)
DKMS_FILES := Kbuild Makefile dkms.conf include/uapi/linux/bftrace.h \
	      $(sort $(wildcard kmod/*.c kmod/*.h))

# source:destination pairs, destinations relative to $(DESTDIR)
INSTALL_BIN := build/user/bfctl:$(BINDIR)/bfctl \
	       build/user/bfcollector:$(BINDIR)/bfcollector \
	       build/user/bfhq:$(BINDIR)/bfhq
INSTALL_DATA := user/ctl/bfctl.8:$(MANDIR)/man8/bfctl.8 \
		user/collector/bfcollector.1:$(MANDIR)/man1/bfcollector.1 \
		user/hq/bfhq.1:$(MANDIR)/man1/bfhq.1 \
		include/uapi/linux/bftrace.h:$(INCLUDEDIR)/linux/bftrace.h \
		$(foreach f,$(sort $(wildcard user/hq/www/*)),$(f):$(WWWDIR)/$(notdir $(f)))

.PHONY: all modules user selftests test demo bench fuzz fuzz-guest clean install \
	uninstall dkms-install dkms-uninstall

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

user:
	$(MAKE) -C user

selftests: user
	$(MAKE) -C selftests/bftrace

test:
	scripts/run-tests.sh

demo:
	scripts/demo.sh

# The libFuzzer harnesses of user/fuzz, one after another: FUZZ_RUNS
# executions each (default 10000000), at most FUZZ_TIME seconds each
# (default 1200); FUZZERS="fuzz_hq ..." picks some.  Then the module's
# netlink fuzzer in a guest on each kernel (fuzz-guest).  Not part of make
# test, which replays the corpora and gives the netlink fuzzer 60 s.
fuzz:
	bash scripts/setup-deps.sh
	$(MAKE) -C user fuzz
	$(MAKE) fuzz-guest

# The module's netlink fuzzer, 5 minutes per kernel in a guest
# (BFT_FUZZ_SECONDS overrides).
fuzz-guest: selftests
	@set -e; . scripts/kernels.sh; for k in $$BFT_ALL_KERNELS; do \
		scripts/build-kmod.sh "$$k"; \
		BFT_FUZZ_SECONDS=$${BFT_FUZZ_SECONDS:-300} scripts/guest-run \
			--kernel "$$k" --timeout 900 -- bash scripts/guest-nl-fuzz.sh "$$k"; \
	done

# The benchmark (bench/results.md, bench/results.json); not a test.
bench:
	scripts/bench

install: user
	@set -e; for p in $(INSTALL_BIN); do \
		echo "install $${p%%:*} -> $(DESTDIR)$${p#*:}"; \
		install -D -m 0755 "$${p%%:*}" "$(DESTDIR)$${p#*:}"; \
	done; for p in $(INSTALL_DATA); do \
		echo "install $${p%%:*} -> $(DESTDIR)$${p#*:}"; \
		install -D -m 0644 "$${p%%:*}" "$(DESTDIR)$${p#*:}"; \
	done

uninstall:
	@for p in $(INSTALL_BIN) $(INSTALL_DATA); do \
		echo "rm -f $(DESTDIR)$${p#*:}"; rm -f "$(DESTDIR)$${p#*:}"; \
	done

# With no DESTDIR this is the host's DKMS: a version added before is
# removed first, so that the new sources are the ones built.
define dkms_remove
	@test -n "$(VERSION)" || { echo "no PACKAGE_VERSION in dkms.conf" >&2; exit 1; }
	@if [ -z "$(DESTDIR)" ] && [ -n "$$(dkms status -m bftrace -v $(VERSION))" ]; then \
		echo "dkms remove -m bftrace -v $(VERSION) --all"; \
		dkms remove -m bftrace -v $(VERSION) --all; \
	fi
	rm -rf "$(DKMS_SRC)"
endef

dkms-install:
	$(dkms_remove)
	@set -e; for f in $(DKMS_FILES); do \
		install -D -m 0644 "$$f" "$(DKMS_SRC)/$$f"; \
	done
ifeq ($(DESTDIR),)
	dkms add -m bftrace -v $(VERSION)
	@set -e; for k in $(DKMS_KERNELS); do \
		echo "dkms build/install -m bftrace -v $(VERSION) -k $$k"; \
		dkms build -m bftrace -v $(VERSION) -k "$$k"; \
		dkms install -m bftrace -v $(VERSION) -k "$$k"; \
	done
endif

dkms-uninstall:
	$(dkms_remove)

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || true
	rm -rf build
