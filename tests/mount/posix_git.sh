#!/usr/bin/env bash
# posix_git.sh - git works inside the mount (issue 3): init, add, commit,
# status, a branch switch with checkout, fsck, gc (packs, renames of lock
# files, mmap of the index and packs), and the repository survives a remount.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

export HOME=$T GIT_CONFIG_NOSYSTEM=1 \
	GIT_AUTHOR_NAME=pathfs GIT_AUTHOR_EMAIL=pathfs@example.org \
	GIT_COMMITTER_NAME=pathfs GIT_COMMITTER_EMAIL=pathfs@example.org
R=$MNT/repo

pfs_mount
mkdir -p "$R/src/sub" "$R/docs"
for i in $(seq 1 40); do
	printf 'line %d of file %d\n' $(seq 1 $((i * 10))) >"$R/src/f$i.c"
done
head -c 200000 /dev/urandom >"$R/docs/blob.bin"
printf 'int main(void) { return 0; }\n' >"$R/src/sub/main.c"
ln -s src/sub/main.c "$R/main-link"
chmod 755 "$R/src/f1.c"

g() { git -C "$R" "$@"; }
check "git init" g init -q -b main
check "git add ." g add .
check "git commit" g commit -q -m "first"
check "git status is clean" test -z "$(g status --porcelain)"
check "git ls-files lists all 43" test "$(g ls-files | wc -l)" = 43

check "git checkout -b feature" g checkout -q -b feature
echo "changed on feature" >>"$R/src/f3.c"
rm "$R/src/f4.c"
echo "new on feature" >"$R/src/new.c"
mv "$R/docs" "$R/manual"
chmod 644 "$R/src/f1.c"
check "git status sees the changes" test -n "$(g status --porcelain)"
check "git add -A" g add -A
check "git commit on feature" g commit -q -m "feature"
FEATURE_F3=$(sha256sum <"$R/src/f3.c")

check "git checkout main (branch switch)" g checkout -q main
check "main: f3.c back to its old content" test \
	"$(g show main:src/f3.c | sha256sum)" = "$(sha256sum <"$R/src/f3.c")"
check "main: f4.c is back" test -f "$R/src/f4.c"
check "main: new.c is gone" test ! -e "$R/src/new.c"
check "main: docs/ is back, manual/ gone" test -f "$R/docs/blob.bin" -a \
	! -e "$R/manual"
check "main: f1.c executable again" test -x "$R/src/f1.c"
check "main: symlink kept" test "$(readlink "$R/main-link")" = src/sub/main.c
check "main: status clean after switch" test -z "$(g status --porcelain)"

check "git checkout feature again" g checkout -q feature
check "feature: f3.c has the feature change" test \
	"$(sha256sum <"$R/src/f3.c")" = "$FEATURE_F3"
check "feature: manual/blob.bin there" test -f "$R/manual/blob.bin"
check "git gc" g gc -q
check "git fsck --full" g fsck --full --no-progress
check "git log shows both commits" test "$(g log --oneline | wc -l)" = 2

pfs_umount
pfs_mount
check "after remount: status clean" test -z "$(g status --porcelain)"
check "after remount: fsck --full" g fsck --full --no-progress
check "after remount: checkout main" g checkout -q main
check "after remount: diff main feature" test \
	"$(g diff --stat main feature | tail -n1 | grep -c 'files changed')" = 1
check "git clone out of the mount" git clone -q "$R" "$T/clone"
check "the clone matches the working tree" diff -r -x .git "$R" "$T/clone"
pfs_umount

sanitizer_clean
finish
