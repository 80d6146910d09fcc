function __aasa-fetch_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __aasa-fetch_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __aasa-fetch_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __aasa-fetch_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __aasa-fetch_parse_tokens -S
    set -l unparsed_tokens (__aasa-fetch_tokens -pc)
    switch $unparsed_tokens[1]
    case 'aasa-fetch'
        __aasa-fetch_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'fetch'
            __aasa-fetch_parse_subcommand 0 'entitlements=' 'app=' 'domain=+' 'domains=' 'app-id=+' 'define=+' 'region=' 'q/quiet' 'cacert=' 'resolve=+' 'connect-to=+' 'connect-timeout=' 'max-time=' 'max-size=' 'allow-private' 'user-agent=' 'retry-delays=' 'concurrency=' 'threads=' 'route=' 'cdn-base=' 'cache=' 'store=' 'no-store' 'format=' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'plan'
            __aasa-fetch_parse_subcommand 0 'entitlements=' 'app=' 'domain=+' 'domains=' 'app-id=+' 'define=+' 'region=' 'q/quiet' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'match'
            __aasa-fetch_parse_subcommand -r 1 'urls=' 'aasa=' 'host=' 'cases=' 'entitlements=' 'app=' 'domain=+' 'domains=' 'app-id=+' 'define=+' 'region=' 'q/quiet' 'cacert=' 'resolve=+' 'connect-to=+' 'connect-timeout=' 'max-time=' 'max-size=' 'allow-private' 'user-agent=' 'retry-delays=' 'concurrency=' 'threads=' 'cache=' 'store=' 'no-store' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'diagnose'
            __aasa-fetch_parse_subcommand 1 'entitlements=' 'app=' 'domain=+' 'domains=' 'app-id=+' 'define=+' 'region=' 'q/quiet' 'cacert=' 'resolve=+' 'connect-to=+' 'connect-timeout=' 'max-time=' 'max-size=' 'allow-private' 'user-agent=' 'retry-delays=' 'concurrency=' 'threads=' 'route=' 'cdn-base=' 'format=' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'refresh'
            __aasa-fetch_parse_subcommand 0 'cache=' 'store=' 'cacert=' 'resolve=+' 'connect-to=+' 'connect-timeout=' 'max-time=' 'max-size=' 'allow-private' 'user-agent=' 'retry-delays=' 'concurrency=' 'threads=' 'cdn-base=' 'region=' 'watch' 'worker' 'interval=' 'lease=' 'owner=' 'batch-size=' 'host=+' 'all' 'metrics=' 'prune-after=' 'keep-history=' 'notify=' 'notify-format=' 'notify-cacert=' 'notify-allow-private' 'format=' 'json' 'q/quiet' 'config=' 'no-config' 'version' 'h/help'
        case 'show'
            __aasa-fetch_parse_subcommand 1 'cache=' 'store=' 'history-limit=' 'versions' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'forget'
            __aasa-fetch_parse_subcommand 1 'cache=' 'store=' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'export'
            __aasa-fetch_parse_subcommand 0 'cache=' 'store=' 'out=' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'report'
            __aasa-fetch_parse_subcommand 0 'cache=' 'store=' 'html=' 'history-limit=' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'lint'
            __aasa-fetch_parse_subcommand -r 1 'format=' 'json' 'max-size=' 'config=' 'no-config' 'version' 'h/help'
        case 'diff'
            __aasa-fetch_parse_subcommand 2 'json' 'max-size=' 'stored' 'route=' 'cache=' 'store=' 'config=' 'no-config' 'version' 'h/help'
        case 'entitlements'
            __aasa-fetch_parse_subcommand 1 'compare=' 'define=+' 'json' 'config=' 'no-config' 'version' 'h/help'
        case 'help'
            __aasa-fetch_parse_subcommand -r 1 'version'
        end
    end
end

function __aasa-fetch_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __aasa-fetch_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __aasa-fetch_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __aasa-fetch_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__aasa-fetch_tokens -p)
    if test -z "$(__aasa-fetch_tokens -t)"
        set -l index (count (__aasa-fetch_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'aasa-fetch' -f
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'fetch' -d 'Download every associated domain\'s file as Apple\'s downloader does, and judge association (default command).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'plan' -d 'Show parsed entries, their findings and the downloads in start order (no network).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'match' -d 'Tell which app a URL opens (match, exclude or no_match) and why.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'diagnose' -d 'Say why a domain does (not) associate: walk the OS\'s steps (entry, DNS, TCP, TLS, HTTP, JSON, structure, app ID, CDN) and stop at the first failure.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'refresh' -d 'Fetch the due hosts of the store (for cron), record them and report changes.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'show' -d 'Show what the store knows: status, last approved file, next check, failures, history.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'forget' -d 'Remove a host, its entries, history and kept approved files from the store.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'export' -d 'Write the last approved file of every host, one file per host and route.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'report' -d 'Write a status page of the store: one self-contained HTML file.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'lint' -d 'Check apple-app-site-association files for syntax, structure and semantic problems.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'diff' -d 'Compare two apple-app-site-association files by meaning.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'entitlements' -d 'Print the entitlements a built app ships (.ipa, .app, Mach-O, provisioning profile) or a plain .entitlements file, and compare them.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" entitlements' -l 'entitlements' -d 'An .entitlements file (XML or binary plist): its associated domains, and its application-identifier as the default app ID.' -rfa '(set -l exts \'entitlements\' \'plist\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" app' -l 'app' -d 'A built app (.ipa, .app or Mach-O): the associated domains and app ID of its signed entitlements.' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch"' -l 'domain' -d 'An entry such as applinks:www.example.com (repeatable); a bare host means applinks:HOST.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" domains' -l 'domains' -d 'A file with one entry a line (\'#\' comments; a bare host means applinks:HOST).' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch"' -l 'app-id' -d 'The app ID to check, TEAMID.bundle.id (repeatable); default: the application-identifier of --entitlements or --app.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch"' -l 'define' -d 'A value for an Xcode variable such as $(APP_DOMAIN) (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" region' -l 'region' -d 'The region whose ccTLDs are fetched second, after .com/.net/.org (e.g. CN, GB); default from LC_ALL, LC_MESSAGES or LANG.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" q quiet' -l 'quiet' -s 'q' -d 'No progress and no notes on standard error.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" cacert' -l 'cacert' -d 'Trust this PEM CA file too (test farms, private servers); results that need it say so.' -rfa '(set -l exts \'pem\' \'crt\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch"' -l 'resolve' -d 'Resolve HOST:PORT to ADDR, as curl (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch"' -l 'connect-to' -d 'Connect to HOST2:PORT2 instead of HOST:PORT, as curl (repeatable; \'::127.0.0.1:8443\' sends every host there).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" connect-timeout' -l 'connect-timeout' -d 'Seconds allowed to connect.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" max-time' -l 'max-time' -d 'Seconds allowed for one request.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" max-size' -l 'max-size' -d 'Largest decoded file accepted, in bytes.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" allow-private' -l 'allow-private' -d 'Allow loopback, private and reserved addresses (refused by default, as Apple\'s CDN does).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" user-agent' -l 'user-agent' -d 'The User-Agent sent.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" retry-delays' -l 'retry-delays' -d 'Seconds to wait before each retry of a transient failure; the count is the number of retries (\'\' for none).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" concurrency' -l 'concurrency' -d 'Most downloads at once (one connection per host).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" threads' -l 'threads' -d 'Download threads, each with its own curl loop (default: one per core the process may use).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" route' -l 'route' -d 'Where devices get the file: origin (direct), cdn (Apple\'s CDN; ?mode= entries still direct) or both (compared by meaning; the origin decides).' -rfka 'origin cdn both'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" cdn-base' -l 'cdn-base' -d 'The CDN\'s base URL; the host is appended.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" cache' -l 'cache' -d 'The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" store' -l 'store' -d 'A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" no-store' -l 'no-store' -d 'Use no store: read no stored file and record nothing (a pure run).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" format' -l 'format' -d 'Output format: human, json, github (GitHub Actions annotations), sarif (SARIF 2.1.0) or junit (JUnit XML).' -rfka 'human json github sarif junit'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" json' -l 'json' -d 'Print JSON (the same as --format json).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch fetch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" entitlements' -l 'entitlements' -d 'An .entitlements file (XML or binary plist): its associated domains, and its application-identifier as the default app ID.' -rfa '(set -l exts \'entitlements\' \'plist\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" app' -l 'app' -d 'A built app (.ipa, .app or Mach-O): the associated domains and app ID of its signed entitlements.' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan"' -l 'domain' -d 'An entry such as applinks:www.example.com (repeatable); a bare host means applinks:HOST.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" domains' -l 'domains' -d 'A file with one entry a line (\'#\' comments; a bare host means applinks:HOST).' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan"' -l 'app-id' -d 'The app ID to check, TEAMID.bundle.id (repeatable); default: the application-identifier of --entitlements or --app.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan"' -l 'define' -d 'A value for an Xcode variable such as $(APP_DOMAIN) (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" region' -l 'region' -d 'The region whose ccTLDs are fetched second, after .com/.net/.org (e.g. CN, GB); default from LC_ALL, LC_MESSAGES or LANG.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" q quiet' -l 'quiet' -s 'q' -d 'No progress and no notes on standard error.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" json' -l 'json' -d 'Print JSON.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch plan" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" urls' -l 'urls' -d 'A file of URLs, one a line (\'-\' for standard input).' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" aasa' -l 'aasa' -d 'An association file on disk to match against.' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" host' -l 'host' -d 'With --aasa: the host the file is served for (default: each URL\'s host).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" cases' -l 'cases' -d 'Conformance line protocol input (\'-\' for standard input).' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" entitlements' -l 'entitlements' -d 'An .entitlements file (XML or binary plist): its associated domains, and its application-identifier as the default app ID.' -rfa '(set -l exts \'entitlements\' \'plist\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" app' -l 'app' -d 'A built app (.ipa, .app or Mach-O): the associated domains and app ID of its signed entitlements.' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match"' -l 'domain' -d 'An entry such as applinks:www.example.com (repeatable); a bare host means applinks:HOST.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" domains' -l 'domains' -d 'A file with one entry a line (\'#\' comments; a bare host means applinks:HOST).' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match"' -l 'app-id' -d 'The app ID to check, TEAMID.bundle.id (repeatable); default: the application-identifier of --entitlements or --app.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match"' -l 'define' -d 'A value for an Xcode variable such as $(APP_DOMAIN) (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" region' -l 'region' -d 'The region whose ccTLDs are fetched second, after .com/.net/.org (e.g. CN, GB); default from LC_ALL, LC_MESSAGES or LANG.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" q quiet' -l 'quiet' -s 'q' -d 'No progress and no notes on standard error.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" cacert' -l 'cacert' -d 'Trust this PEM CA file too (test farms, private servers); results that need it say so.' -rfa '(set -l exts \'pem\' \'crt\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match"' -l 'resolve' -d 'Resolve HOST:PORT to ADDR, as curl (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match"' -l 'connect-to' -d 'Connect to HOST2:PORT2 instead of HOST:PORT, as curl (repeatable; \'::127.0.0.1:8443\' sends every host there).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" connect-timeout' -l 'connect-timeout' -d 'Seconds allowed to connect.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" max-time' -l 'max-time' -d 'Seconds allowed for one request.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" max-size' -l 'max-size' -d 'Largest decoded file accepted, in bytes.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" allow-private' -l 'allow-private' -d 'Allow loopback, private and reserved addresses (refused by default, as Apple\'s CDN does).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" user-agent' -l 'user-agent' -d 'The User-Agent sent.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" retry-delays' -l 'retry-delays' -d 'Seconds to wait before each retry of a transient failure; the count is the number of retries (\'\' for none).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" concurrency' -l 'concurrency' -d 'Most downloads at once (one connection per host).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" threads' -l 'threads' -d 'Download threads, each with its own curl loop (default: one per core the process may use).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" cache' -l 'cache' -d 'The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" store' -l 'store' -d 'A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" no-store' -l 'no-store' -d 'Use no store: read no stored file and record nothing (a pure run).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" json' -l 'json' -d 'Print JSON lines.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch match" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" entitlements' -l 'entitlements' -d 'An .entitlements file (XML or binary plist): its associated domains, and its application-identifier as the default app ID.' -rfa '(set -l exts \'entitlements\' \'plist\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" app' -l 'app' -d 'A built app (.ipa, .app or Mach-O): the associated domains and app ID of its signed entitlements.' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose"' -l 'domain' -d 'An entry such as applinks:www.example.com (repeatable); a bare host means applinks:HOST.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" domains' -l 'domains' -d 'A file with one entry a line (\'#\' comments; a bare host means applinks:HOST).' -rF
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose"' -l 'app-id' -d 'The app ID to check, TEAMID.bundle.id (repeatable); default: the application-identifier of --entitlements or --app.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose"' -l 'define' -d 'A value for an Xcode variable such as $(APP_DOMAIN) (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" region' -l 'region' -d 'The region whose ccTLDs are fetched second, after .com/.net/.org (e.g. CN, GB); default from LC_ALL, LC_MESSAGES or LANG.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" q quiet' -l 'quiet' -s 'q' -d 'No progress and no notes on standard error.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" cacert' -l 'cacert' -d 'Trust this PEM CA file too (test farms, private servers); results that need it say so.' -rfa '(set -l exts \'pem\' \'crt\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose"' -l 'resolve' -d 'Resolve HOST:PORT to ADDR, as curl (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose"' -l 'connect-to' -d 'Connect to HOST2:PORT2 instead of HOST:PORT, as curl (repeatable; \'::127.0.0.1:8443\' sends every host there).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" connect-timeout' -l 'connect-timeout' -d 'Seconds allowed to connect.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" max-time' -l 'max-time' -d 'Seconds allowed for one request.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" max-size' -l 'max-size' -d 'Largest decoded file accepted, in bytes.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" allow-private' -l 'allow-private' -d 'Allow loopback, private and reserved addresses (refused by default, as Apple\'s CDN does).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" user-agent' -l 'user-agent' -d 'The User-Agent sent.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" retry-delays' -l 'retry-delays' -d 'Seconds to wait before each retry of a transient failure; the count is the number of retries (\'\' for none).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" concurrency' -l 'concurrency' -d 'Most downloads at once (one connection per host).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" threads' -l 'threads' -d 'Download threads, each with its own curl loop (default: one per core the process may use).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" route' -l 'route' -d 'Where devices get the file: origin (direct), cdn (Apple\'s CDN; ?mode= entries still direct) or both (compared by meaning; the origin decides).' -rfka 'origin cdn both'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" cdn-base' -l 'cdn-base' -d 'The CDN\'s base URL; the host is appended.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" format' -l 'format' -d 'Output format: human, json, github (GitHub Actions annotations), sarif (SARIF 2.1.0) or junit (JUnit XML).' -rfka 'human json github sarif junit'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" json' -l 'json' -d 'Print JSON (the same as --format json).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diagnose" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" cache' -l 'cache' -d 'The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" store' -l 'store' -d 'A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" cacert' -l 'cacert' -d 'Trust this PEM CA file too (test farms, private servers); results that need it say so.' -rfa '(set -l exts \'pem\' \'crt\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh"' -l 'resolve' -d 'Resolve HOST:PORT to ADDR, as curl (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh"' -l 'connect-to' -d 'Connect to HOST2:PORT2 instead of HOST:PORT, as curl (repeatable; \'::127.0.0.1:8443\' sends every host there).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" connect-timeout' -l 'connect-timeout' -d 'Seconds allowed to connect.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" max-time' -l 'max-time' -d 'Seconds allowed for one request.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" max-size' -l 'max-size' -d 'Largest decoded file accepted, in bytes.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" allow-private' -l 'allow-private' -d 'Allow loopback, private and reserved addresses (refused by default, as Apple\'s CDN does).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" user-agent' -l 'user-agent' -d 'The User-Agent sent.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" retry-delays' -l 'retry-delays' -d 'Seconds to wait before each retry of a transient failure; the count is the number of retries (\'\' for none).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" concurrency' -l 'concurrency' -d 'Most downloads at once (one connection per host).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" threads' -l 'threads' -d 'Download threads, each with its own curl loop (default: one per core the process may use).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" cdn-base' -l 'cdn-base' -d 'The CDN\'s base URL for hosts recorded through the CDN (fetch --route cdn); the host is appended.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" region' -l 'region' -d 'The region whose ccTLDs come second in priority; default from LC_ALL, LC_MESSAGES or LANG.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" watch' -l 'watch' -d 'Keep running: a pass every --interval until SIGINT, SIGTERM or SIGHUP.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" worker' -l 'worker' -d 'Keep running as one of many workers on a shared store (--store postgres://…): lease due hosts batch by batch until SIGINT, SIGTERM or SIGHUP.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" interval' -l 'interval' -d 'With --watch: the pause between passes (default 15m); with --worker: the longest sleep when nothing is due (default 60s). 30s, 15m, 2h, or seconds.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" lease' -l 'lease' -d 'How long a leased batch stays this process\'s before other workers may take it over (default: enough for the batch\'s worst case). 90s, 10m, or seconds.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" owner' -l 'owner' -d 'The lease owner name, unique per worker (default: host:pid:random).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" batch-size' -l 'batch-size' -d 'Hosts leased per batch (default: 4 × --concurrency, at least 16).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh"' -l 'host' -d 'Fetch this host now, whatever is due (repeatable; every route of it).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" all' -l 'all' -d 'Fetch every host of the store that an entry needs now, whatever is due.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" metrics' -l 'metrics' -d 'After the pass, write Prometheus metrics (per host and route, and the pass\'s totals) to this file, atomically, for node_exporter\'s textfile collector.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" prune-after' -l 'prune-after' -d 'Remove a host that no entry needs any more (its app\'s entitlements were recorded again without it) this long after; 0 or never keeps it (default 30d).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" keep-history' -l 'keep-history' -d 'Remove history events older than this; 0 or never keeps them all (default 180d).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" notify' -l 'notify' -d 'POST one JSON event per change to this https:// or http:// URL (a webhook); undelivered events are kept in the store and sent first next time.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" notify-format' -l 'notify-format' -d 'The body sent: json (the event) or slack ({"text": …}, for a Slack incoming webhook).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" notify-cacert' -l 'notify-cacert' -d 'PEM file of CA certificates to trust for the webhook instead of the system store.' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" notify-allow-private' -l 'notify-allow-private' -d 'Allow the webhook on a loopback, private or reserved address (refused by default, as for every host).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" format' -l 'format' -d 'Output format: human, json, github (GitHub Actions annotations), sarif (SARIF 2.1.0) or junit (JUnit XML).' -rfka 'human json github sarif junit'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" json' -l 'json' -d 'Print JSON (the same as --format json).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" q quiet' -l 'quiet' -s 'q' -d 'No progress or notes on standard error.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch refresh" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" cache' -l 'cache' -d 'The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" store' -l 'store' -d 'A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" history-limit' -l 'history-limit' -d 'With a host: how many history events (latest).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" versions' -l 'versions' -d 'With a host: list its kept approved files (latest first: index 0, -1, …) for diff --stored HOST@-N.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" json' -l 'json' -d 'Print JSON.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch show" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch forget" cache' -l 'cache' -d 'The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch forget" store' -l 'store' -d 'A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch forget" json' -l 'json' -d 'Print JSON.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch forget" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch forget" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch forget" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch forget" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch export" cache' -l 'cache' -d 'The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch export" store' -l 'store' -d 'A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch export" out' -l 'out' -d 'The folder to write to (default: export inside the cache folder).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch export" json' -l 'json' -d 'Print JSON.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch export" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch export" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch export" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch export" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" cache' -l 'cache' -d 'The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" store' -l 'store' -d 'A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" html' -l 'html' -d 'The HTML file to write (replaced atomically; - for standard output).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" history-limit' -l 'history-limit' -d 'History events shown per host (the latest).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" json' -l 'json' -d 'Print JSON: what was written (with --html FILE; the page itself is never JSON).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch report" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch lint" -ge 1' -F
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch lint" format' -l 'format' -d 'Output format: human, json, github (GitHub Actions annotations), sarif (SARIF 2.1.0) or junit (JUnit XML).' -rfka 'human json github sarif junit'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch lint" json' -l 'json' -d 'Print JSON (the same as --format json).'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch lint" max-size' -l 'max-size' -d 'Size limit in bytes (default 131072 = 128 KiB).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch lint" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch lint" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch lint" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch lint" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch diff" -eq 1' -F
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch diff" -eq 2' -F
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" json' -l 'json' -d 'Write the changes as JSON.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" max-size' -l 'max-size' -d 'Largest file read, in bytes (default 131072 = 128 KiB).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" stored' -l 'stored' -d 'OLD and NEW name approved files kept in the store: HOST (the latest), HOST@-1 (the one before), HOST@-N.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" route' -l 'route' -d 'With --stored: the files fetched from the origin (default) or through Apple\'s CDN.' -rfka 'origin cdn'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" cache' -l 'cache' -d 'The folder of the store, aasa-fetch.sqlite (default: $AASA_FETCH_CACHE, else ./cache).' -rfa '(__aasa-fetch_complete_directories)'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" store' -l 'store' -d 'A PostgreSQL store instead of the SQLite file, shared by workers on many machines: postgres://user@host:port/database (default: $AASA_FETCH_STORE).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch diff" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_positional "aasa-fetch entitlements" -eq 1' -F
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch entitlements" compare' -l 'compare' -d 'The project\'s .entitlements file to compare with.' -rfa '(set -l exts \'entitlements\' \'plist\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch entitlements"' -l 'define' -d 'A value for an Xcode variable of the compared file (repeatable).' -rfka ''
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch entitlements" json' -l 'json' -d 'Print JSON.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch entitlements" config' -l 'config' -d 'Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.' -rfa '(set -l exts \'json\' \'yaml\' \'yml\';for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.{$exts};printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch entitlements" no-config' -l 'no-config' -d 'Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch entitlements" version' -l 'version' -d 'Show the version.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch entitlements" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'aasa-fetch' -n '__aasa-fetch_should_offer_completions_for_flags_or_options "aasa-fetch help" version' -l 'version' -d 'Show the version.'
