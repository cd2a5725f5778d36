# hprof-shrink - build, test and install.
#
#   make                 libhprof.a, hprof-shrink and the tools (in build/)
#   make check           unit tests (Check) and CLI tests
#   make check SANITIZE=1  the same under AddressSanitizer + UBSan (build-san/)
#   make check-tsan      the threaded suites under ThreadSanitizer (build-tsan/)
#   make demo            shrink a bundled fixture
#   make fuzz            libFuzzer targets, FUZZ_SECONDS each (default 60)
#   make bench           the benchmark (tools/bench.sh; SIZES="20 300 2000" MB)
#   make install PREFIX=/usr/local DESTDIR=
#
# Missing Debian packages are installed first (tools/ensure-deps.sh).

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
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
# gzip members are deflated by ISA-L at level 1 (2-7x faster than libdeflate
# there) and by libdeflate at levels 2-9 (2.5x faster than zlib); ISAL=0
# builds without ISA-L, libdeflate then does level 1 too; DEFLATE=zlib
# builds with neither, zlib then does every level.
DEFLATE ?= libdeflate
ISAL ?= 1
ifeq ($(DEFLATE),libdeflate)
CPPFLAGS += -DHPROF_WITH_LIBDEFLATE
ifeq ($(ISAL),1)
CPPFLAGS += -DHPROF_WITH_ISAL
LDLIBS_LIB := -lisal -ldeflate -lcrypto -lz -pthread
PC_PRIVATE := libisal libdeflate libcrypto zlib
else
LDLIBS_LIB := -ldeflate -lcrypto -lz -pthread
PC_PRIVATE := libdeflate libcrypto zlib
B := $(B)-noisal
endif
else
ISAL := 0
LDLIBS_LIB := -lcrypto -lz -pthread
PC_PRIVATE := libcrypto zlib
B := $(B)-zlib
endif
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

LIB_SRC := $(wildcard src/*/*.c)
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/src/%.o)
TOOLS := hprof-shrink hprof-verify hprof-info hprof-bitmaps hprof-synth
TOOL_BIN := $(TOOLS:%=$(B)/%)
TEST_SRC := $(wildcard tests/check_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)

.PHONY: all check check-tsan demo bench fuzz clean install uninstall

FUZZ_TARGETS := reader shrink verify info
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
REPLAY_BIN := $(FUZZ_TARGETS:%=$(B)/fuzz/replay_%)

all: $(B)/.deps $(B)/libhprof.a $(TOOL_BIN)

$(B)/.deps: tools/ensure-deps.sh
	@mkdir -p $(B)
	@DEFLATE=$(DEFLATE) ISAL=$(ISAL) tools/ensure-deps.sh build
	@touch $@

$(B)/.check-deps: tools/ensure-deps.sh
	@mkdir -p $(B)
	@DEFLATE=$(DEFLATE) ISAL=$(ISAL) tools/ensure-deps.sh check
	@touch $@

$(B)/src/%.o: src/%.c $(SRC_HDR) include/*.h | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SRC_INC) $(CFLAGS) -c -o $@ $<

$(B)/libhprof.a: $(LIB_OBJ)
	ar rcs $@ $^

$(B)/tools/cli.o: tools/cli.c tools/cli.h include/*.h | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/%: tools/%.c $(B)/tools/cli.o $(B)/libhprof.a tools/cli.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/tools/cli.o $(B)/libhprof.a $(LDLIBS_LIB)

$(B)/tests/%: tests/%.c tests/testlib.c tests/testlib.h tests/facts.c tests/facts.h $(B)/libhprof.a | $(B)/.check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SRC_INC) $(CFLAGS) -o $@ $< tests/testlib.c tests/facts.c $(B)/libhprof.a $(LDLIBS_LIB) $(CHECK_LIBS)

$(B)/tests/hprof-roundtrip: tests/hprof-roundtrip.c $(B)/libhprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/libhprof.a $(LDLIBS_LIB)

$(B)/tests/fault_write.so: tests/fault/fault_write.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Werror -o $@ $< -ldl

# The fuzz targets without libFuzzer, to replay the regression corpus.
$(B)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/regression_driver.c $(B)/libhprof.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< tests/fuzz/regression_driver.c $(B)/libhprof.a $(LDLIBS_LIB)

# The fuzz targets with libFuzzer (clang), always with ASan and UBSan.
$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRC) $(SRC_HDR) include/*.h | $(B)/.fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(SRC_INC) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $< $(LIB_SRC) $(LDLIBS_LIB)

$(B)/.fuzz-deps: tools/ensure-deps.sh
	@mkdir -p $(B)
	@tools/ensure-deps.sh fuzz
	@touch $@

fuzz: all $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%) $(B)/tests/check_hostile
	@mkdir -p $(B)/hostile && HPROF_HOSTILE_OUT=$(B)/hostile $(B)/tests/check_hostile > /dev/null
	@tools/fuzz.sh $(B) $(FUZZ_SECONDS)

check: all $(B)/.check-deps $(TEST_BIN) $(B)/tests/hprof-roundtrip $(B)/bench-time $(B)/tests/fault_write.so $(REPLAY_BIN)
	@rm -rf $(B)/hostile && mkdir -p $(B)/hostile
	@set -e; for t in $(TEST_BIN); do echo "===> $$t"; HPROF_BUILD=$(B) HPROF_HOSTILE_OUT=$(B)/hostile $$t; done
	@set -e; for t in $(FUZZ_TARGETS); do $(B)/fuzz/replay_$$t tests/fuzz/corpus/$$t $(B)/hostile; done
	@HPROF_BUILD=$(B) SANITIZE=$(SANITIZE) DEFLATE=$(DEFLATE) tests/cli-tests.sh
	@HPROF_BUILD=$(B) tests/salvage-tests.sh

# The suites that run threads (the write pass, gzip members, the reference
# filter's thread) under ThreadSanitizer, which cannot share a build with
# AddressSanitizer.
TSAN_TESTS := check_writer check_shrink check_verify check_salvage

build-tsan/tests/%: tests/%.c tests/testlib.c tests/testlib.h tests/facts.c tests/facts.h $(LIB_SRC) $(SRC_HDR) include/*.h | $(B)/.check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SRC_INC) -std=c11 -pthread $(WARN) -O1 -g -fsanitize=thread -o $@ $< \
		tests/testlib.c tests/facts.c $(LIB_SRC) $(LDLIBS_LIB) $(CHECK_LIBS)

check-tsan: all $(TSAN_TESTS:%=build-tsan/tests/%)
	@set -e; for t in $(TSAN_TESTS); do echo "===> $$t (ThreadSanitizer)"; \
		HPROF_BUILD=$(B) TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/$$t; done

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

$(B)/libhprof.pc: Makefile
	@mkdir -p $(B)
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: libhprof\nDescription: streaming reader, visitor chain and writer for Java and Android heap dumps\nVersion: %s\nLibs: -L$${libdir} -lhprof\nLibs.private: $(LDLIBS_LIB)\nRequires.private: $(PC_PRIVATE)\nCflags: -I$${includedir}\n' \
		'$(PREFIX)' '$(shell sed -n 's/^#define HPROF_VERSION_STRING "\(.*\)"/\1/p' include/hprof.h)' > $@

install: all $(B)/libhprof.pc
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man3
	install -m 755 $(INSTALLED_TOOLS:%=$(B)/%) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(B)/libhprof.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 $(B)/libhprof.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 644 include/hprof.h include/hprof_visitor.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.3 $(DESTDIR)$(PREFIX)/share/man/man3/

uninstall:
	rm -f $(INSTALLED_TOOLS:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(PREFIX)/lib/libhprof.a \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig/libhprof.pc \
		$(DESTDIR)$(PREFIX)/include/hprof.h $(DESTDIR)$(PREFIX)/include/hprof_visitor.h \
		$(patsubst man/%,$(DESTDIR)$(PREFIX)/share/man/man1/%,$(wildcard man/*.1)) \
		$(patsubst man/%,$(DESTDIR)$(PREFIX)/share/man/man3/%,$(wildcard man/*.3))
