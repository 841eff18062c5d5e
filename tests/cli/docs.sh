#!/usr/bin/env bash
# docs/CLI.md agrees with every verb's --help: each verb has a section
# that names every option of its own (the shared ones are in the table of
# "Options the verbs share"), the sentence on shared options a verb does
# not take names exactly those, and the synopsis opening the section asks
# for the options the usage line asks for (outside [...] and (...)) and
# names no option the verb lacks.
source "$(dirname "$0")/lib.bash"
DOC="$ROOT/docs/CLI.md"
errors=0
bad() { echo "FAIL: $*" >&2; errors=$((errors + 1)); }
verbs=$("$DCZ" --help | sed -n 's/^  \([a-z]\{1,\}\)  .*/\1/p')
[ "$(echo "$verbs" | wc -w)" -ge 10 ] || fail "dcz --help lists no verbs: $verbs"
# the options of a --help text on stdin, one per line, without dashes
help_opts() { sed -n '/^options:/,$p' | sed -n 's/^ \{2,\}\(-[a-z], \)\{0,1\}--\([a-z0-9-]\{1,\}\).*/\2/p' | sort -u; }
# the options of text on stdin outside brackets and parentheses, as above
required() {
    tr '\n' ' ' | awk '{ d = 0; w = ""
        for (i = 1; i <= length($0) + 1; i++) {
            c = i <= length($0) ? substr($0, i, 1) : " "
            if (c == "[" || c == "(") d++
            else if (c == "]" || c == ")") d--
            if (c ~ /[ \[\]()|]/) { if (w ~ /^-/ && wd == 0) print w; w = "" }
            else { if (w == "") wd = d; w = w c }
        } }' | sed 's/^-o$/--output/; s/^--//' | sort -u
}
shared=$(awk '/^## Options the verbs share/ { on = 1; next } /^## / { on = 0 } on && /^\| `/' "$DOC" |
         cut -d'|' -f2 | grep -o -- '--[a-z0-9-]*' | sed 's/^--//' | sort -u)
[ -n "$shared" ] && echo "$shared" | grep -qx data || fail "no table of shared options in $DOC"
lacks_line=$(grep '^A verb takes only the options it uses:' "$DOC")
[ -n "$lacks_line" ] || fail "no sentence on the shared options a verb does not take"
all_help=""
for v in $verbs; do
    sec=$(awk -v h="### $v" '$0 == h { on = 1; next } /^###? / { on = 0 } on' "$DOC")
    [ -n "$sec" ] || fail "docs/CLI.md has no section '### $v'"
    "$DCZ" "$v" --help > "$T/help" || fail "$v --help"
    opts=$(help_opts < "$T/help")
    all_help="$all_help $opts"
    # every option of its own is in its section
    for o in $opts; do
        echo "$shared" | grep -qx -- "$o" && continue
        echo "$sec" | grep -Eq -- "--$o([^a-z0-9-]|\$)" || bad "dcz $v --help has --$o; its section in docs/CLI.md does not name it"
    done
    # the shared options it lacks (--max-data-mb goes with --data)
    lacks=$(for o in $shared; do echo "$opts" | grep -qx -- "$o" || echo "$o"; done)
    echo "$lacks" | grep -qx data && lacks=$(echo "$lacks" | grep -vx max-data-mb)
    said=$(echo "$lacks_line" | sed 's/^A verb takes only the options it uses: //; s/\. Giving one.*//' | tr ';' '\n' |
           awk -v v="$v" '{ n = split($0, p, / no /); if (index(p[1], "`" v "`")) print p[2] }' |
           grep -o -- '`-[-a-z0-9]*`' | tr -d '`' | sed 's/^-o$/--output/; s/^--//' | sort -u)
    [ "$(echo $lacks)" = "$(echo $said)" ] ||
        bad "$v lacks the shared options '$(echo $lacks)'; docs/CLI.md says it has no '$(echo $said)'"
    # the synopsis: the first code span of the section that starts "dcz VERB"
    syn=$(echo "$sec" | grep -o '`dcz '"$v"'[^`]*`' | head -n 1 | tr -d '`')
    [ -n "$syn" ] || fail "the section of $v opens with no synopsis"
    use=$(sed -n '/^usage: /,/^$/p' "$T/help" | sed 's/^usage: //')
    [ "$(echo "$syn" | required | tr '\n' ' ')" = "$(echo "$use" | required | tr '\n' ' ')" ] ||
        bad "$v: docs/CLI.md's synopsis '$syn' requires '$(echo "$syn" | required | tr '\n' ' ')', --help's '$use' requires '$(echo "$use" | required | tr '\n' ' ')'"
    for o in $(echo "$syn" | grep -o -- '--[a-z0-9-]*' | sed 's/^--//'); do
        echo "$opts" | grep -qx -- "$o" || bad "$v: docs/CLI.md's synopsis names --$o, which dcz $v --help lacks"
    done
    echo "$v: $(echo $opts | wc -w) options documented"
done
# every shared option is taken by some verb
for o in $shared; do echo "$all_help" | grep -qw -- "$o" || bad "docs/CLI.md shares --$o, which no verb takes"; done
[ "$errors" -eq 0 ] || fail "$errors disagreements between docs/CLI.md and --help"
