# fpgacomm: top-level build. `make` builds the library, emulator, tools and
# tests; `make check` and `make demo` first install what a fresh Debian 12
# machine lacks (scripts/install-deps.sh).

PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR    ?=

# The release is the public API's major.minor (FC_API_VERSION_* in
# include/fpgacomm/fpgacomm.h, whose symbols lib/libfpgacomm.map versions
# as FPGACOMM_MAJOR.MINOR) and a patch level; scripts/check-rules.sh checks
# that the header and the map agree.
API_VERSION = $(shell sed -n 's/^\#define FC_API_VERSION_$(1)[[:space:]]*//p' \
		include/fpgacomm/fpgacomm.h)
VERSION    := $(call API_VERSION,MAJOR).$(call API_VERSION,MINOR).0
SOVERSION  := 0

CC       ?= cc
AR       ?= ar
CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-unused-parameter -Werror=implicit-function-declaration
# WERROR=1 (as .ci/run builds) turns every warning into an error.
ifeq ($(WERROR),1)
WARN     += -Werror
endif
CPPFLAGS += -D_GNU_SOURCE -Iinclude
# Include paths per folder, so that a folder's private headers stay its own:
# include/ (the public API, the ioctl ABI, the hardware contract) is for
# all; topo/ is code shared by the emulator, lib/ and the tools. A program
# that needs another folder's header says why below.
INC :=
ALL_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -pthread

B := build

# topo/: topologies, pure code shared by the emulator, lib/ and tools/.
TOPO_SRC := $(wildcard topo/*.c)
# model/: the timing model's profiles and arithmetic (docs/model.md), pure
# code the emulator's virtual time, make model and the tests share.
MODEL_SRC := $(wildcard model/*.c)
MODEL_OBJ := $(MODEL_SRC:%.c=$(B)/%.o) $(B)/model/builtin.o
PROFILES := $(wildcard model/profiles/*.prof)
EMU_SRC := $(wildcard emu/*.c)
# lib/: one folder per layer, lowest first (docs/layout.md; the order is
# scripts/check-layers.sh's): peer/ (GPU and dma-buf memory), core/
# (memory, DMA, handles, progress), backend/ (the boards: emulated, or
# through /dev/fpgacommN), hbm/ (HBM streams), fabric/ (the transport),
# proto/ (protocols on it), chan/ (channels, puts, tagged messages),
# coll/ (groups and collectives), sort/, open/ (fc_open: puts them together).
LIB_DIRS := peer core backend hbm fabric proto chan coll sort open
LIB_SRC := $(foreach d,$(LIB_DIRS),$(wildcard lib/$(d)/*.c))
TOPO_OBJ := $(TOPO_SRC:%.c=$(B)/%.o)
EMU_OBJ := $(EMU_SRC:%.c=$(B)/%.o)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
TOOLS   := $(patsubst tools/%.c,$(B)/tools/%,$(wildcard tools/fpgacomm-*.c)) \
           $(B)/tools/fpgacomm-emud
EMUD_SRC := $(wildcard tools/emud/*.c)
TESTS   := $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/test_*.c))
EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))

LIB_SO     := $(B)/libfpgacomm.so.$(VERSION)
LIB_SONAME := libfpgacomm.so.$(SOVERSION)
LIB_A      := $(B)/libfpgacomm.a
EMU_A      := $(B)/libfcemu.a
LIB_LIBS   := -lnuma -pthread

.PHONY: all lib prov tools tests examples check check-full demo bench model install uninstall driver deps format-check \
        clean format FORCE

all: lib prov tools tests examples

lib: $(LIB_SO) $(LIB_A) $(B)/fpgacomm.pc

# Each folder of lib/ sees its own headers and those of the folders below
# it that it uses; a header named *_internal.h is its folder's alone.
$(B)/lib/peer/%.o: INC := -Ilib/peer -Ilib/core
$(B)/lib/core/%.o: INC := -Ilib/core -Ilib/peer
$(B)/lib/hbm/%.o: INC := -Ilib/hbm -Ilib/core
$(B)/lib/fabric/%.o: INC := -Ilib/fabric -Ilib/core
$(B)/lib/proto/%.o: INC := -Ilib/proto -Ilib/fabric -Ilib/core
$(B)/lib/chan/%.o: INC := -Ilib/chan -Ilib/proto -Ilib/fabric -Ilib/core
$(B)/lib/coll/%.o: INC := -Ilib/coll -Ilib/chan -Ilib/fabric -Ilib/core -Itopo
$(B)/lib/sort/%.o: INC := -Ilib/sort -Ilib/core
$(B)/lib/open/%.o: INC := -Ilib/open -Ilib/hbm -Ilib/core
$(B)/emu/%.o: INC := -Iemu -Itopo -Imodel
$(B)/topo/%.o: INC := -Itopo
$(B)/model/%.o: INC := -Imodel
# The shipped profiles, built into the library: known by name anywhere.
$(B)/model/builtin.c: $(PROFILES) scripts/embed-profiles.sh
	@mkdir -p $(dir $@)
	scripts/embed-profiles.sh $@ $(PROFILES)
$(B)/model/builtin.o: $(B)/model/builtin.c model/builtin.h
	$(CC) $(CPPFLAGS) -Imodel $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@
# The emu backend is the host of the in-process emulated board (emu/fcemu.h).
$(B)/lib/backend/%.o: INC := -Ilib/backend -Ilib/peer -Ilib/core -Itopo
$(B)/lib/backend/backend_emu.o $(B)/lib/backend/backend_emu_dma.o: INC := -Ilib/backend -Ilib/peer -Ilib/core -Itopo -Iemu

# The bridge carries links between hosts over libfabric, loaded at run
# time (dlopen): built with it where its headers are (libfabric-dev).
HAVE_OFI_H := $(shell echo '\#include <rdma/fabric.h>' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_OFI_H),1)
$(B)/emu/bridge_ofi.o $(B)/emu/bridge_setup.o: CPPFLAGS += -DFCEMU_HAVE_OFI
$(B)/emu/bridge_rma.o: CPPFLAGS += -DFCEMU_HAVE_OFI
endif

# ... and names the bridges' endpoints through PMIx under mpirun or srun,
# libpmix loaded at run time too, where its headers are (libpmix-dev).
PMIX_INC ?= $(firstword $(wildcard /usr/include/pmix.h /usr/lib/$(shell $(CC) -dumpmachine)/pmix2/include/pmix.h))
ifneq ($(PMIX_INC),)
$(B)/lib/backend/bootstrap_pmix.o: CPPFLAGS += -DFC_HAVE_PMIX -I$(dir $(PMIX_INC))
endif

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(INC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@

$(EMU_A): $(EMU_OBJ) $(TOPO_OBJ) $(MODEL_OBJ)
	$(AR) rcs $@ $^

$(LIB_A): $(LIB_OBJ) $(EMU_OBJ) $(TOPO_OBJ) $(MODEL_OBJ)
	$(AR) rcs $@ $^

$(LIB_SO): $(LIB_OBJ) $(EMU_OBJ) $(TOPO_OBJ) $(MODEL_OBJ) lib/libfpgacomm.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,$(LIB_SONAME) \
		-Wl,--version-script=lib/libfpgacomm.map -Wl,-z,defs \
		-o $@ $(LIB_OBJ) $(EMU_OBJ) $(TOPO_OBJ) $(MODEL_OBJ) $(LIB_LIBS)
	ln -sf $(notdir $@) $(B)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(B)/libfpgacomm.so

# Regenerated whenever the install paths differ from the last build's.
PC_PATHS := $(PREFIX):$(LIBDIR):$(INCLUDEDIR)
$(B)/fpgacomm.pc: lib/fpgacomm.pc.in Makefile FORCE
	@mkdir -p $(B)
	@if [ "$$(cat $(B)/.pc-paths 2>/dev/null)" != "$(PC_PATHS)" ] || [ ! -f $@ ]; then \
		echo "GEN $@"; echo "$(PC_PATHS)" > $(B)/.pc-paths; \
		sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@; \
	fi

FORCE:

# prov/: the libfabric provider "fpgacomm" (libfpgacomm-fi.so), a thin
# layer over the library, linked with its static form so that libfabric
# loads it alone. Built where libfabric's headers are (libfabric-dev);
# installed where Debian's libfabric looks for providers (FI_PROVDIR).
HAVE_LIBFABRIC := $(shell pkg-config --exists libfabric 2>/dev/null && \
			  test -f $$(pkg-config --variable=includedir libfabric)/rdma/providers/fi_prov.h && echo 1)
FI_PROVDIR ?= $(shell pkg-config --variable=libdir libfabric 2>/dev/null)/libfabric
PROV_SRC := $(wildcard prov/*.c)
PROV_OBJ := $(PROV_SRC:%.c=$(B)/%.o)
PROV_SO  := $(B)/libfpgacomm-fi.so
$(B)/prov/%.o: INC := -Iprov
ifeq ($(HAVE_LIBFABRIC),1)
prov: $(PROV_SO)
else
prov:
	@echo "prov: libfabric-dev not installed: the provider is not built (scripts/install-deps.sh --mpi)"
endif
$(PROV_SO): $(PROV_OBJ) $(LIB_A) prov/libfpgacomm-fi.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,--version-script=prov/libfpgacomm-fi.map \
		-Wl,-z,defs -o $@ $(PROV_OBJ) $(LIB_A) $(LIB_LIBS) -lfabric

# Tools and tests link the static library so that they run from the tree.
tools: $(TOOLS)
$(B)/tools/%: tools/%.c tools/tool_util.c tools/tool_util.h $(LIB_A)
	@mkdir -p $(dir $@)
	@mkdir -p $(B)/deps
	$(CC) $(CPPFLAGS) $(INC) $(ALL_CFLAGS) -MMD -MP -MF $(B)/deps/$(notdir $@).d tools/tool_util.c $< $(TOOL_EXTRA) -o $@ $(LIB_A) $(LIB_LIBS) -lpci

# fpgacomm-route prints and loads routing tables: topo/.
$(B)/tools/fpgacomm-route: INC := -Itopo
# fpgacomm-model prints the timing model's arithmetic: model/.
$(B)/tools/fpgacomm-model: INC := -Imodel
# fpgacomm-run creates the emulated cluster its ranks join: emu/fabric.h.
$(B)/tools/fpgacomm-run: INC := -Iemu -Itopo -Imodel

# fpgacomm-bench's collectives live in a file of their own.
$(B)/tools/fpgacomm-bench: tools/bench_coll.c tools/bench_coll.h
$(B)/tools/fpgacomm-bench: TOOL_EXTRA := tools/bench_coll.c
# ... and DMA to and from GPU memory too.
$(B)/tools/fpgacomm-bench: tools/bench_gpu.c tools/bench_gpu.h tools/bench_cuda.c \
			   tools/bench_gpu_fabric.c
$(B)/tools/fpgacomm-bench: TOOL_EXTRA += tools/bench_gpu.c tools/bench_gpu_fabric.c \
					  tools/bench_cuda.c
# ... and its sort in another.
$(B)/tools/fpgacomm-bench: tools/bench_sort.c tools/bench_sort.h
$(B)/tools/fpgacomm-bench: TOOL_EXTRA += tools/bench_sort.c
# ... and the cost of one small message, both ends in one process.
$(B)/tools/fpgacomm-bench: tools/bench_msgcost.c tools/bench_msgcost.h
$(B)/tools/fpgacomm-bench: TOOL_EXTRA += tools/bench_msgcost.c
$(B)/tools/fpgacomm-bench: tools/bench_hbm.c tools/bench_hbm.h
$(B)/tools/fpgacomm-bench: TOOL_EXTRA += tools/bench_hbm.c

# The daemon that hosts the emulated board behind QEMU ivshmem (so: emu/).
$(B)/tools/fpgacomm-emud: $(EMUD_SRC) tools/emud/ivshmem.h tools/emud/bell.h $(EMU_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Iemu -Itopo -Imodel $(ALL_CFLAGS) $(EMUD_SRC) -o $@ $(EMU_A)

# Programs a user starts from: only the public header and the library.
examples: $(EXAMPLES)
$(B)/examples/%: examples/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) -Iinclude $(ALL_CFLAGS) $< -o $@ $(LIB_A) $(LIB_LIBS) -lm

tests: $(TESTS)
$(B)/tests/%: tests/%.c tests/harness.c tests/harness.h $(LIB_A)
	@mkdir -p $(dir $@)
	@mkdir -p $(B)/deps
	$(CC) $(CPPFLAGS) $(INC) $(ALL_CFLAGS) -MMD -MP -MF $(B)/deps/$(notdir $@).d tests/harness.c $< -o $@ $(LIB_A) $(LIB_LIBS) -lcmocka $(TEST_LIBS)

# test_libfabric uses the provider through libfabric, and runs an MPI
# program (built with mpicc where Open MPI is) under mpirun.
ifeq ($(HAVE_LIBFABRIC),1)
$(B)/tests/test_libfabric: TEST_LIBS := -lfabric
endif
MPICC ?= mpicc
HAVE_MPICC := $(shell command -v $(MPICC) >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_MPICC),1)
tests: $(B)/tests/mpi/mpi_fabric
endif
$(B)/tests/mpi/mpi_fabric: tests/mpi/mpi_fabric.c
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) $(WARN) -std=gnu11 $< -o $@

# Tests go through the public API, except these: the emulator's own (its
# registers, clusters and internals), those that make an emulated cluster
# in process, and the topology's.
EMU_TESTS := test_emu_model test_model test_emu_trust test_fabric_emu test_fabric_pair \
	     test_board_reset test_chan_abort test_send_close \
	     test_handles test_peer_gpu test_run test_single_thread
$(EMU_TESTS:%=$(B)/tests/%): INC := -Iemu -Itopo -Imodel
$(B)/tests/test_topology: INC := -Itopo
# test_coll_mem reads the channels' counters (lib/core/chan_stats.h);
# test_live checks the library's sets of live objects (lib/core/live.h),
# test_lock its mutex (lib/core/lock.h).
$(B)/tests/test_coll_mem $(B)/tests/test_live $(B)/tests/test_lock: INC := -Ilib/core
# test_rndv_get: a pair made in process, and the counter of reads.
$(B)/tests/test_rndv_get: INC := -Iemu -Itopo -Imodel -Ilib/core
# test_rndv_stream: a pair made in process, and the counter of announcements.
$(B)/tests/test_rndv_stream: INC := -Iemu -Itopo -Imodel -Ilib/core
# test_eager: a pair made in process, and the counter of straight receives.
$(B)/tests/test_eager: INC := -Iemu -Itopo -Imodel -Ilib/core

# A stand-in CUDA driver: test_peer_gpu and test_gpu_coll run against it
# where no GPU is.
FAKE_CUDA := $(B)/tests/fake-cuda/libcuda.so.1
tests: $(FAKE_CUDA)
$(FAKE_CUDA): tests/fake_libcuda.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -fPIC -fvisibility=hidden $< -o $@

deps:
	@scripts/install-deps.sh

# The library's tests on the emulated board (test_libfabric with Open MPI
# over the provider), then the driver in a VM.
check: deps
	@scripts/install-deps.sh --mpi || \
		echo "check: Open MPI could not be installed; test_libfabric skips its MPI part"
	$(MAKE) all
	scripts/check.sh $(TESTS)

# The whole collectives matrix (more shapes and sizes than make check's cut).
check-full: all
	FPGACOMM_TEST_FULL=1 FPGACOMM_TEST_TIMEOUT=3600 \
		scripts/run-tests.sh $(B)/tests/test_collectives

demo: deps
	$(MAKE) all
	scripts/demo.sh

# DMA on the emulated board beside memcpy, then one chain of 255 against
# 255 single transfers through the driver in a VM (skipped, saying why,
# without qemu, a kernel with headers or strace: install-deps.sh --vm),
# then one 8 B message's instructions (install-deps.sh --valgrind; skipped,
# saying why, without it) and time in one process, then channels between
# two ranks beside Open MPI (install-deps.sh --mpi; its half skipped, saying
# why, if that fails) and a plain shared-memory ring, and latency against hop
# count on a 4x4 torus, then DMA to and from GPU memory beside cuMemcpy
# (skipped, saying why, without a GPU); then the collectives and the
# sort beside Open MPI; then each script's table (build/bench/*.dat) drawn
# as a PNG beside it (scripts/plot.sh, gnuplot: install-deps.sh --plot).
bench: deps
	$(MAKE) all
	@echo "== Chaining DMA on the emulated board (scripts/bench.sh)"
	scripts/bench.sh
	@echo
	@echo "== HBM streams: the paper's invert beside a host loop (scripts/bench-hbm.sh)"
	scripts/bench-hbm.sh
	@echo
	@echo "== Chains through the driver in a VM (scripts/vm/bench-driver.sh)"
	@rc=0; scripts/vm/bench-driver.sh || rc=$$?; \
	if [ $$rc = 77 ]; then \
		echo "bench: the VM part was skipped (see above); scripts/install-deps.sh --vm installs what it needs"; \
	elif [ $$rc != 0 ]; then \
		exit $$rc; \
	fi
	@echo
	@echo "== Small messages through the driver in a VM: event queue against rings (scripts/vm/bench-fabric-driver.sh)"
	@rc=0; scripts/vm/bench-fabric-driver.sh || rc=$$?; \
	if [ $$rc = 77 ]; then \
		echo "bench: the VM part was skipped (see above); scripts/install-deps.sh --vm installs what it needs"; \
	elif [ $$rc != 0 ]; then \
		exit $$rc; \
	fi
	@echo
	@echo "== One small message's instructions and time in one process (scripts/bench-msgcost.sh)"
	@scripts/install-deps.sh --valgrind || \
		echo "bench: valgrind could not be installed; the instruction count is skipped"
	scripts/bench-msgcost.sh
	@echo
	@echo "== Channels beside Open MPI, hops on a torus (scripts/bench-fabric.sh)"
	@scripts/install-deps.sh --mpi || \
		echo "bench: Open MPI could not be installed; the fabric bench runs without it"
	scripts/bench-fabric.sh
	@echo
	@echo "== Collectives beside Open MPI on 2, 4 and 8 ranks (scripts/bench-coll.sh)"
	scripts/bench-coll.sh
	@echo
	@echo "== DMA to and from GPU memory beside cuMemcpy (fpgacomm-bench gpu)"
	@rc=0; $(B)/tools/fpgacomm-bench gpu || rc=$$?; \
	if [ $$rc = 77 ]; then \
		echo "bench: the GPU part was skipped (see above): it needs a CUDA driver and a GPU"; \
	elif [ $$rc != 0 ]; then \
		exit $$rc; \
	fi
	@echo
	@echo "== The distributed sort beside Open MPI and one process (scripts/bench-sort.sh)"
	scripts/bench-sort.sh
	@echo
	@echo "== Plots of the tables above (scripts/plot.sh: build/bench/*.png)"
	@scripts/install-deps.sh --plot || \
		echo "bench: gnuplot could not be installed; the plots are skipped"
	@rc=0; scripts/plot.sh || rc=$$?; \
	if [ $$rc = 77 ]; then \
		echo "bench: the plots were skipped (see above)"; \
	elif [ $$rc != 0 ]; then \
		exit $$rc; \
	fi

# Each paper's experiment on the emulated boards in simulated time, with
# that paper's profile (model/profiles/): its figure, the model's, the ratio
# (docs/model.md). Run after make.
model:
	@scripts/model.sh

driver:
	@scripts/build-driver.sh

# The driver built with W=1 (as errors) and sparse against every installed
# kernel's headers; `make check` runs it too.
.PHONY: driver-lint
driver-lint:
	@scripts/driver-lint.sh

install: lib prov tools
	install -d $(DESTDIR)$(INCLUDEDIR)/fpgacomm/uapi $(DESTDIR)$(LIBDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(BINDIR)
	install -m 644 include/fpgacomm/fpgacomm.h include/fpgacomm/hw.h \
		$(DESTDIR)$(INCLUDEDIR)/fpgacomm/
	install -m 644 include/uapi/fpgacomm.h $(DESTDIR)$(INCLUDEDIR)/fpgacomm/uapi/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libfpgacomm.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(B)/fpgacomm.pc $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	@if [ -f $(PROV_SO) ]; then \
		echo "install -m 755 $(PROV_SO) $(DESTDIR)$(FI_PROVDIR)/"; \
		install -d $(DESTDIR)$(FI_PROVDIR) && \
		install -m 755 $(PROV_SO) $(DESTDIR)$(FI_PROVDIR)/; \
	fi

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/fpgacomm/fpgacomm.h \
	      $(DESTDIR)$(INCLUDEDIR)/fpgacomm/uapi/fpgacomm.h \
	      $(DESTDIR)$(INCLUDEDIR)/fpgacomm/hw.h \
	      $(DESTDIR)$(LIBDIR)/libfpgacomm.* $(DESTDIR)$(PKGCONFIGDIR)/fpgacomm.pc \
	      $(patsubst $(B)/tools/%,$(DESTDIR)$(BINDIR)/%,$(TOOLS)) \
	      $(DESTDIR)$(FI_PROVDIR)/libfpgacomm-fi.so

# The C files clang-format keeps in kernel style (.clang-format); the
# driver keeps it by hand and is checked by scripts/driver-lint.sh.
FORMAT_SRC = $(wildcard lib/*.[ch] lib/*/*.[ch] emu/*.[ch] topo/*.[ch] \
	     prov/*.[ch] model/*.[ch] tools/*.[ch] tools/emud/*.[ch] \
	     tests/*.[ch] tests/mpi/*.c examples/*.c)

format:
	clang-format -i $(FORMAT_SRC)

# Lists the files that `make format` would change (scripts/check-rules.sh).
format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRC) 2>&1 | \
		sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u

clean:
	rm -rf $(B) build-asan

# ---- The ioctl fuzzer (tests/test_driver_fuzz.c) in the VM for longer
# than the few seconds `make check` gives it: FUZZ_SECONDS per pass. ----
.PHONY: fuzz
FUZZ_SECONDS ?= 60
fuzz: deps
	$(MAKE) all
	scripts/install-deps.sh --vm
	FCVM_APPEND="$$FCVM_APPEND fpgacomm_fuzz=$(FUZZ_SECONDS)" scripts/vm/run-vm-tests.sh

# ---- Sanitizers: the library, emulator, tools and tests under ASan and
# UBSan, built apart in build-asan/: every host test program, or (the cut
# that `make check` runs) a few that reach the trust boundary. ----
.PHONY: check-asan check-asan-cut
ASAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	       -fno-sanitize-recover=undefined
ASAN_RUN := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_TESTS ?= $(notdir $(TESTS))
ASAN_TOOLS ?= tools
ASAN_CUT := test_bad_input test_emu_trust test_handles
check-asan: deps
	$(MAKE) B=build-asan CFLAGS="$(ASAN_CFLAGS)" $(ASAN_TOOLS) \
		$(ASAN_TESTS:%=build-asan/tests/%)
	$(ASAN_RUN) scripts/run-tests.sh $(ASAN_TESTS:%=build-asan/tests/%)
check-asan-cut:
	$(MAKE) check-asan ASAN_TESTS="$(ASAN_CUT)" ASAN_TOOLS=

# ---- The kernel driver: install, and its tests in a VM ----
.PHONY: driver-install vm-check

# Installs the fpgacomm.ko that `make driver` built, for the kernel it was
# built for (from its vermagic; KDIR=DIR names the build tree otherwise),
# with kbuild's modules_install (DESTDIR becomes INSTALL_MOD_PATH; signed
# only if the build tree has a signing key), then driver/99-fpgacomm.rules
# if the driver has one, then depmod (not when staging into DESTDIR).
driver-install: driver
	@set -e; ko=driver/fpgacomm.ko; \
	krel=$$(modinfo -F vermagic $$ko | cut -d' ' -f1); \
	kdir='$(KDIR)'; kdir=$${kdir:-/lib/modules/$$krel/build}; \
	echo "driver-install: $$ko for $$krel, build tree $$kdir"; \
	nosign=; \
	if [ ! -f "$$kdir/certs/signing_key.pem" ]; then \
		echo "driver-install: no signing key in $$kdir: module unsigned"; \
		nosign=CONFIG_MODULE_SIG_ALL=; \
	fi; \
	$(MAKE) -C "$$kdir" M=$(CURDIR)/driver INSTALL_MOD_PATH=$(DESTDIR) \
		$$nosign modules_install; \
	if [ -f driver/99-fpgacomm.rules ]; then \
		install -D -m 644 driver/99-fpgacomm.rules \
			$(DESTDIR)/etc/udev/rules.d/99-fpgacomm.rules; \
		if [ -z '$(DESTDIR)' ] && command -v udevadm > /dev/null; then \
			udevadm control --reload 2> /dev/null || true; \
		fi; \
	fi; \
	if [ -z '$(DESTDIR)' ]; then depmod -a $$krel; fi

# ---- The driver through DKMS: rebuilt for every kernel installed later ----
.PHONY: dkms-install dkms-remove
DKMS_SRC := /usr/src/fpgacomm-$(VERSION)

# As root: lays out $(DKMS_SRC) (driver/'s sources, Kbuild, Makefile,
# dkms.conf with PACKAGE_VERSION=$(VERSION), and include/), then dkms add,
# build and install for KVER=REL, by default the running kernel if its
# headers are installed, else the newest kernel that has headers. A
# version added before is removed first. Then driver/99-fpgacomm.rules.
dkms-install:
	@set -e; \
	[ "$$(id -u)" = 0 ] || { echo "dkms-install: run as root" >&2; exit 1; }; \
	command -v dkms > /dev/null || \
		{ echo "dkms-install: dkms not installed (apt-get install dkms)" >&2; exit 1; }; \
	krel='$(KVER)'; \
	if [ -z "$$krel" ]; then \
		krel=$$(uname -r); \
		if [ ! -f "/lib/modules/$$krel/build/Makefile" ]; then \
			newest=$$(ls -d /lib/modules/*/build 2> /dev/null | sort -V | tail -n 1); \
			[ -n "$$newest" ] || { echo "dkms-install: no kernel headers" \
				"installed (apt-get install linux-headers-$$krel, or KVER=REL)" >&2; exit 1; }; \
			krel=$$(basename "$$(dirname "$$newest")"); \
			echo "dkms-install: no headers for the running kernel $$(uname -r);" \
				"building for $$krel (KVER=REL picks another)"; \
		fi; \
	fi; \
	if [ -n "$$(dkms status fpgacomm/$(VERSION))" ]; then \
		dkms remove fpgacomm/$(VERSION) --all; \
	fi; \
	rm -rf $(DKMS_SRC); \
	install -d $(DKMS_SRC)/include/fpgacomm $(DKMS_SRC)/include/uapi; \
	install -m 644 $(wildcard driver/fc_*.c driver/fc*.h) driver/Kbuild \
		driver/Makefile $(DKMS_SRC)/; \
	sed 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="$(VERSION)"/' driver/dkms.conf \
		> $(DKMS_SRC)/dkms.conf; \
	install -m 644 include/fpgacomm/*.h $(DKMS_SRC)/include/fpgacomm/; \
	install -m 644 include/uapi/*.h $(DKMS_SRC)/include/uapi/; \
	dkms add fpgacomm/$(VERSION); \
	dkms build -k "$$krel" fpgacomm/$(VERSION); \
	dkms install -k "$$krel" fpgacomm/$(VERSION); \
	install -D -m 644 driver/99-fpgacomm.rules /etc/udev/rules.d/99-fpgacomm.rules; \
	if command -v udevadm > /dev/null; then udevadm control --reload 2> /dev/null || true; fi

# Undoes dkms-install: dkms remove for every kernel, $(DKMS_SRC), and the
# udev rule if it is still ours as installed.
dkms-remove:
	@set -e; \
	[ "$$(id -u)" = 0 ] || { echo "dkms-remove: run as root" >&2; exit 1; }; \
	found=; \
	if command -v dkms > /dev/null && [ -n "$$(dkms status fpgacomm/$(VERSION))" ]; then \
		dkms remove fpgacomm/$(VERSION) --all; found=1; \
	fi; \
	if [ -e $(DKMS_SRC) ]; then rm -rf $(DKMS_SRC); found=1; fi; \
	if cmp -s driver/99-fpgacomm.rules /etc/udev/rules.d/99-fpgacomm.rules; then \
		rm -f /etc/udev/rules.d/99-fpgacomm.rules; found=1; \
		if command -v udevadm > /dev/null; then udevadm control --reload 2> /dev/null || true; fi; \
	fi; \
	if [ -n "$$found" ]; then echo "dkms-remove: fpgacomm/$(VERSION) removed"; \
	else echo "dkms-remove: fpgacomm/$(VERSION) was not installed"; fi

# The driver and the library against two emulated boards in a QEMU VM
# (TCG, 2 CPUs are enough); see scripts/vm/README.md. Part of `check`.
vm-check:
	@scripts/install-deps.sh --vm
	scripts/vm/run-vm-tests.sh

-include $(shell find $(B) -name '*.d' 2>/dev/null)
