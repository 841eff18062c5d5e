#!/usr/bin/env bash
# Recipe files: options as 'key = value' lines, comments, flags, and the
# command line winning over the recipe; per-layer rules with later rules
# winning.
source "$(dirname "$0")/lib.bash"
"$DCZ" train --arch mlp:784-40-20-10 --epochs 1 --data fashion-mnist -q -o "$T/m.dcz" || fail "train"
cat > "$T/r.txt" <<'R'
# one-shot pruning for a batch job
sparsity = fc*=0.5, fc2=0.75   # later rules win
quiet = true
R
"$DCZ" prune "$T/m.dcz" --recipe "$T/r.txt" --json -o "$T/a.dcz" > "$T/a.json" 2> "$T/a.err" || fail "prune with recipe"
[ ! -s "$T/a.err" ] || fail "quiet from the recipe was ignored: $(cat "$T/a.err")"
"$DCZ" info "$T/a.dcz" --json > "$T/a.info"
grep -q '"name":"fc1","op":"dense","shape":\[40,784\],"density":0.5,' "$T/a.info" || fail "fc1 not at 50%"
grep -q '"name":"fc2","op":"dense","shape":\[20,40\],"density":0.25,' "$T/a.info" || fail "fc2 not at 25%"
# the command line wins over the recipe
"$DCZ" prune "$T/m.dcz" --recipe "$T/r.txt" --sparsity 0.8 -o "$T/b.dcz" || fail "override"
"$DCZ" info "$T/b.dcz" --json > "$T/b.info"
grep -q '"name":"fc2","op":"dense","shape":\[20,40\],"density":0.2,' "$T/b.info" || fail "flag did not win"
# a recipe line that is not 'key = value', or names an unknown option, is a usage error
printf 'sparsity 0.5\n' > "$T/bad.txt"
expect 1 "$DCZ" prune "$T/m.dcz" --recipe "$T/bad.txt" -o "$T/c.dcz"
printf '# sizes\nsparsity = 0.5\ncolour = blue\n' > "$T/bad2.txt"
expect 1 "$DCZ" prune "$T/m.dcz" --recipe "$T/bad2.txt" -o "$T/c.dcz"
grep -q "bad2.txt:3: unknown key 'colour'" "$T/err" || fail "no file and line: $(cat "$T/err")"
expect 2 "$DCZ" prune "$T/m.dcz" --recipe "$T/none.txt" -o "$T/c.dcz"
expect 2 "$DCZ" prune "$T/m.dcz" --recipe "$T" -o "$T/c.dcz"
grep -q 'Is a directory' "$T/err" || fail "a folder as recipe: $(cat "$T/err")"
# one file for several verbs: [verb] sections, lines before them for all
printf 'seed = 3\n[train]\narch = mlp:784-12-10\nepochs = 1\n[prune]\nsparsity = 0.75\n' > "$T/both.txt"
"$DCZ" train --recipe "$T/both.txt" --data fashion-mnist -q -o "$T/t.dcz" || fail "train from a sectioned recipe"
"$DCZ" prune "$T/t.dcz" --recipe "$T/both.txt" -q -o "$T/tp.dcz" || fail "prune from a sectioned recipe"
"$DCZ" info "$T/tp.dcz" --json > "$T/tp.info"
grep -q '"name":"fc1","op":"dense","shape":\[12,784\],"density":0.25,' "$T/tp.info" || fail "sections not applied"
echo "recipe ok"
