# SPDX-License-Identifier: GPL-2.0
#
# `make` builds bftrace.ko for the running kernel, or for KDIR=<build dir>.
# The user-space tools and the tests have their own makefiles; this one
# only ties them together.

KDIR ?= /lib/modules/$(shell uname -r)/build
PREFIX ?= /usr/local

.PHONY: all modules user selftests test demo bench clean

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

# The benchmark (bench/results.md, bench/results.json); not a test.
bench:
	scripts/bench

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || true
	rm -rf build
