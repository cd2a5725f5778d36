# hprof-shrink - build, test and install.
#
#   make                 libhprof.a, libhprof.so, hprof-shrink and the tools (in build/)
#   make check           unit tests (Check) and CLI tests
#   make check SANITIZE=1  the same under AddressSanitizer + UBSan (build-san/)
#   make check-tsan      the threaded suites under ThreadSanitizer (build-tsan/)
#   make check-cluster   --shard on a real one-node Slurm cluster (root)
#   make demo            shrink a bundled fixture
#   make fuzz            libFuzzer targets, FUZZ_SECONDS each (default 60)
#   make bench           the benchmark (tools/bench.sh; SIZES="20 300 2000" MB)
#   make bench-cluster   a Slurm array against the one-machine batch (root)
#   make install PREFIX=/usr/local DESTDIR=   (make uninstall, the same way)
#
# Missing Debian packages are installed first (tools/ensure-deps.sh).

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
# A cross build names its own binutils: OBJCOPY=aarch64-linux-gnu-objcopy.
OBJCOPY ?= objcopy
SANITIZE ?=

ifeq ($(SANITIZE),1)
B := build-san
OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else
B := build
OPT := -O2 -g
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS += -Iinclude -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64
# The library's own headers, by concern (see docs/design.md); tools see
# only include/.
SRC_INC := -Isrc/common -Isrc/core -Isrc/rewrite -Isrc/analyze
SRC_HDR = src/*/*.h
CFLAGS ?=
CFLAGS += -std=c11 -pthread $(WARN) $(OPT)
# gzip members are deflated by libdeflate at every level (2.5x faster than
# zlib, and the same bytes on every machine); DEFLATE=zlib builds without
# it, zlib then does every level.
# libzstd writes --zstd outputs (5x faster than gzip -1 and smaller, for
# uploads) and reads .zst inputs, in every build.
DEFLATE ?= libdeflate
ifeq ($(DEFLATE),libdeflate)
CPPFLAGS += -DHPROF_WITH_LIBDEFLATE
LDLIBS_LIB := -ldeflate -lzstd -lcrypto -lz -pthread
PC_PRIVATE := libdeflate libzstd libcrypto zlib
else
LDLIBS_LIB := -lzstd -lcrypto -lz -pthread
PC_PRIVATE := libzstd libcrypto zlib
B := $(B)-zlib
endif
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

# The shared library, named after HPROF_VERSION_* in include/hprof.h:
# libhprof.so.MAJOR (the soname) -> libhprof.so.MAJOR.MINOR, and
# libhprof.so -> libhprof.so.MAJOR for the linker.
hprof_version = $(shell sed -n 's/^\#define HPROF_VERSION_$(1) \([0-9][0-9]*\)$$/\1/p' include/hprof.h)
SO_MAJOR := $(call hprof_version,MAJOR)
SO_MINOR := $(call hprof_version,MINOR)
SONAME := libhprof.so.$(SO_MAJOR)
SOFILE := $(SONAME).$(SO_MINOR)

LIB_SRC := $(wildcard src/*/*.c)
# The tools' shared code (tools/cli.h), by concern.
CLI_SRC := tools/cli.c tools/cli_output.c tools/cli_input.c
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/src/%.o)
TOOLS := hprof-shrink hprof-verify hprof-info hprof-bitmaps hprof-synth
TOOL_BIN := $(TOOLS:%=$(B)/%)
TEST_SRC := $(wildcard tests/check_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)

.PHONY: all check check-tsan check-cluster demo bench bench-cluster fuzz clean install uninstall

FUZZ_TARGETS := reader shrink verify info
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
REPLAY_BIN := $(FUZZ_TARGETS:%=$(B)/fuzz/replay_%)

all: $(B)/.deps $(B)/libhprof.a $(B)/$(SOFILE) $(TOOL_BIN)

$(B)/.deps: tools/ensure-deps.sh
	@mkdir -p $(B)
	@DEFLATE=$(DEFLATE) tools/ensure-deps.sh build
	@touch $@

$(B)/.check-deps: tools/ensure-deps.sh
	@mkdir -p $(B)
	@DEFLATE=$(DEFLATE) tools/ensure-deps.sh check
	@touch $@

# The library's objects serve libhprof.so and libhprof.a alike: position
# independent, and every symbol hidden but the API (HPROF_API in include/).
# -fno-semantic-interposition lets calls between exported functions be
# inlined and bound directly, as in a non-PIC build.
LIB_CFLAGS := -fPIC -fvisibility=hidden -fno-semantic-interposition

$(B)/src/%.o: src/%.c $(SRC_HDR) include/*.h | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SRC_INC) $(CFLAGS) $(LIB_CFLAGS) -c -o $@ $<

# libhprof.a is one object, linked from all of them (ld -r) with the hidden
# symbols then made local, so that it defines only hprof_ names as the
# shared library does; the tools, the suites that use only the API and
# every program outside the tree link against that.  The suites that call
# internal functions link libhprof-internal.a, the plain archive of the
# same objects (tests/README.md says which).
$(B)/libhprof-internal.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/libhprof.a: $(LIB_OBJ)
	$(LD) -r -o $(B)/libhprof.o $^
	$(OBJCOPY) --localize-hidden $(B)/libhprof.o
	rm -f $@
	ar rcs $@ $(B)/libhprof.o

$(B)/$(SOFILE): $(LIB_OBJ)
	$(CC) -shared $(CFLAGS) -Wl,-soname,$(SONAME) -Wl,--no-undefined -Wl,-z,defs \
		-o $@ $^ $(LDLIBS_LIB)
	ln -sf $(SOFILE) $(B)/$(SONAME)
	ln -sf $(SONAME) $(B)/libhprof.so

# What every tool shares (tools/cli.h), one object per concern.
CLI_OBJ := $(patsubst tools/%.c,$(B)/tools/%.o,$(CLI_SRC))

$(B)/tools/%.o: tools/%.c tools/*.h include/*.h | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/%: tools/%.c $(CLI_OBJ) $(B)/libhprof.a tools/cli.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(CLI_OBJ) $(B)/libhprof.a $(LDLIBS_LIB)

# hprof-synth: options and the dump's order; its parts in tools/synth/.
SYNTH_SRC := $(wildcard tools/synth/*.c)
$(B)/hprof-synth: tools/hprof-synth.c $(SYNTH_SRC) tools/synth/synth.h $(CLI_OBJ) $(B)/libhprof.a tools/cli.h
	$(CC) $(CPPFLAGS) -Itools $(CFLAGS) -o $@ $< $(SYNTH_SRC) $(CLI_OBJ) $(B)/libhprof.a $(LDLIBS_LIB)

# hprof-shrink: options and one file; batch mode in batch.c.
$(B)/hprof-shrink: tools/hprof-shrink.c $(B)/tools/batch.o $(B)/tools/batch_inputs.o $(CLI_OBJ) $(B)/libhprof.a tools/cli.h tools/shrink.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/tools/batch.o $(B)/tools/batch_inputs.o $(CLI_OBJ) $(B)/libhprof.a $(LDLIBS_LIB)

# hprof-info's printing is shared with the info fuzz target, which checks
# that its JSON parses (tests/fuzz/json_check.c).
INFO_PRINT := tools/info-print.c tools/info-print.h
$(B)/hprof-info: tools/hprof-info.c $(INFO_PRINT) $(CLI_OBJ) $(B)/libhprof.a tools/cli.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< tools/info-print.c $(CLI_OBJ) $(B)/libhprof.a $(LDLIBS_LIB)

$(B)/tests/%: tests/%.c tests/testlib.c tests/testlib.h tests/facts.c tests/facts.h $(B)/libhprof-internal.a | $(B)/.check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SRC_INC) $(CFLAGS) -o $@ $< tests/testlib.c tests/facts.c $(B)/libhprof-internal.a $(LDLIBS_LIB) $(CHECK_LIBS)

# Suites that use only the API, built as a program outside the tree is.
PUBLIC_TESTS := check_hostile
$(PUBLIC_TESTS:%=$(B)/tests/%): $(B)/tests/%: tests/%.c tests/testlib.c tests/testlib.h $(B)/libhprof.a | $(B)/.check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< tests/testlib.c $(B)/libhprof.a $(LDLIBS_LIB) $(CHECK_LIBS)

$(B)/tests/hprof-roundtrip: tests/hprof-roundtrip.c $(B)/libhprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/libhprof.a $(LDLIBS_LIB)

$(B)/tests/hprof-secrets: tests/hprof-secrets.c $(B)/libhprof-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SRC_INC) $(CFLAGS) -o $@ $< $(B)/libhprof-internal.a $(LDLIBS_LIB)

$(B)/tests/fault_write.so: tests/fault/fault_write.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Werror -o $@ $< -ldl

# The fuzz targets without libFuzzer, to replay the regression corpus.
$(B)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/regression_driver.c $(B)/libhprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< tests/fuzz/regression_driver.c $(B)/libhprof.a $(LDLIBS_LIB)

$(B)/fuzz/replay_info: tests/fuzz/fuzz_info.c tests/fuzz/regression_driver.c tests/fuzz/json_check.c $(INFO_PRINT) $(CLI_SRC) $(B)/libhprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itools $(CFLAGS) -o $@ $< tests/fuzz/regression_driver.c tests/fuzz/json_check.c \
		tools/info-print.c $(CLI_SRC) $(B)/libhprof.a $(LDLIBS_LIB)

# The fuzz targets with libFuzzer (clang), always with ASan and UBSan.
$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRC) $(SRC_HDR) include/*.h | $(B)/.fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(SRC_INC) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $< $(LIB_SRC) $(LDLIBS_LIB)

$(B)/fuzz/fuzz_info: tests/fuzz/fuzz_info.c tests/fuzz/json_check.c $(INFO_PRINT) $(CLI_SRC) $(LIB_SRC) $(SRC_HDR) include/*.h | $(B)/.fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(SRC_INC) -Itools -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $< tests/fuzz/json_check.c tools/info-print.c $(CLI_SRC) \
		$(LIB_SRC) $(LDLIBS_LIB)

$(B)/.fuzz-deps: tools/ensure-deps.sh
	@mkdir -p $(B)
	@tools/ensure-deps.sh fuzz
	@touch $@

fuzz: all $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%) $(B)/tests/check_hostile
	@mkdir -p $(B)/hostile && HPROF_HOSTILE_OUT=$(B)/hostile $(B)/tests/check_hostile > /dev/null
	@tools/fuzz.sh $(B) $(FUZZ_SECONDS)

check: all $(B)/.check-deps $(TEST_BIN) $(B)/tests/hprof-roundtrip $(B)/tests/hprof-secrets $(B)/bench-time $(B)/tests/fault_write.so $(REPLAY_BIN)
	@rm -rf $(B)/hostile && mkdir -p $(B)/hostile
	@set -e; for t in $(TEST_BIN); do echo "===> $$t"; HPROF_BUILD=$(B) HPROF_HOSTILE_OUT=$(B)/hostile $$t; done
	@set -e; for t in $(FUZZ_TARGETS); do $(B)/fuzz/replay_$$t tests/fuzz/corpus/$$t $(B)/hostile; done
	@tests/layering-tests.sh
	@tests/check-layering.sh $(B)
	@HPROF_BUILD=$(B) SANITIZE=$(SANITIZE) DEFLATE=$(DEFLATE) tests/cli-tests.sh
	@HPROF_BUILD=$(B) tests/salvage-tests.sh

# The suites that run threads (the worker pool, the write pass, gzip members
# deflated and inflated, the reference filter's thread) under
# ThreadSanitizer, which cannot share a build with AddressSanitizer.
TSAN_TESTS := check_pool check_writer check_shrink check_verify check_salvage check_input check_md5 \
	check_stream check_one_pass

build-tsan/tests/%: tests/%.c tests/testlib.c tests/testlib.h tests/facts.c tests/facts.h $(LIB_SRC) $(SRC_HDR) include/*.h | $(B)/.check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SRC_INC) -std=c11 -pthread $(WARN) -O1 -g -fsanitize=thread -o $@ $< \
		tests/testlib.c tests/facts.c $(LIB_SRC) $(LDLIBS_LIB) $(CHECK_LIBS)

check-tsan: all $(TSAN_TESTS:%=build-tsan/tests/%)
	@set -e; for t in $(TSAN_TESTS); do echo "===> $$t (ThreadSanitizer)"; \
		HPROF_BUILD=$(B) TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/$$t; done

# Slurm's daemons (munged, slurmctld, slurmd) are started as root by the
# test itself and stopped after it; see tests/cluster/.
check-cluster: all $(B)/tests/fault_write.so
	@tools/ensure-deps.sh cluster
	@HPROF_BUILD=$(B) tests/cluster-tests.sh

bench-cluster: all
	@tools/ensure-deps.sh cluster
	@tools/bench-cluster.sh $(B)

demo: all
	@tools/demo.sh $(B)

bench: all $(B)/.check-deps $(B)/tests/hprof-roundtrip $(B)/bench-time
	@tools/bench.sh $(B)

# The benchmark's timer: a plain program, no library.
$(B)/bench-time: tools/bench-time.c | $(B)/.deps
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $<

clean:
	rm -rf build build-*

INSTALLED_TOOLS := hprof-shrink hprof-verify hprof-info hprof-bitmaps
LIBDIR := $(PREFIX)/lib
HPROF_VERSION_STRING = $(shell sed -n 's/^\#define HPROF_VERSION_STRING "\(.*\)"/\1/p' include/hprof.h)

# The pkg-config file is written at install time, for the PREFIX given
# then.  `pkg-config --libs libhprof` links the shared library; --static
# adds Libs.private, the libraries this build chose.  No Requires.private:
# pkg-config fails outright when one of the modules it names has no .pc
# file, and the headers need none of them.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man3
	install -m 755 $(INSTALLED_TOOLS:%=$(B)/%) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(B)/libhprof.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(B)/$(SOFILE) $(DESTDIR)$(LIBDIR)/
	ln -sf $(SOFILE) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libhprof.so
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
		'Name: libhprof' \
		'Description: streaming reader, visitor chain and writer for Java and Android heap dumps' \
		'Version: $(HPROF_VERSION_STRING)' \
		'Libs: -L$${libdir} -lhprof' \
		'Libs.private: $(LDLIBS_LIB)' \
		'Cflags: -I$${includedir}' > $(DESTDIR)$(LIBDIR)/pkgconfig/libhprof.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/libhprof.pc
	install -m 644 include/hprof.h include/hprof_visitor.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.3 $(DESTDIR)$(PREFIX)/share/man/man3/

uninstall:
	rm -f $(INSTALLED_TOOLS:%=$(DESTDIR)$(PREFIX)/bin/%) \
		$(DESTDIR)$(LIBDIR)/libhprof.a $(DESTDIR)$(LIBDIR)/$(SOFILE) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libhprof.so \
		$(DESTDIR)$(LIBDIR)/pkgconfig/libhprof.pc \
		$(DESTDIR)$(PREFIX)/include/hprof.h $(DESTDIR)$(PREFIX)/include/hprof_visitor.h \
		$(patsubst man/%,$(DESTDIR)$(PREFIX)/share/man/man1/%,$(wildcard man/*.1)) \
		$(patsubst man/%,$(DESTDIR)$(PREFIX)/share/man/man3/%,$(wildcard man/*.3))
