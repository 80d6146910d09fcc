@testable import AASAFetchCLI
import Testing

/// Human output escapes every control character in one place (``Console/out(_:)``), and only the
/// colours of ``Console/paint(_:_:)`` reach the terminal.
struct TerminalTextTests {
    @Test func controlCharactersAreEscaped() {
        #expect(TerminalText.escaped("plain ✔ text · ü") == "plain ✔ text · ü")
        #expect(TerminalText.escaped("a\u{1B}]0;title\u{07}b") == "a\\x1B]0;title\\x07b")
        #expect(TerminalText.escaped("x\u{1B}[2Jy") == "x\\x1B[2Jy")
        #expect(TerminalText.escaped("line\nnext\r\tend\u{0}") == "line\\nnext\\r\\tend\\x00")
        #expect(TerminalText.escaped("del\u{7F} csi\u{9B}31m") == "del\\x7F csi\\x9B31m")
        #expect(TerminalText.escaped("abc\u{202E}cba \u{2066}x\u{2069}") == "abc\\u{202E}cba \\u{2066}x\\u{2069}")
        // Neighbours of the escaped ranges stay.
        #expect(TerminalText.escaped("\u{A0}\u{202F}\u{2065}\u{206A}") == "\u{A0}\u{202F}\u{2065}\u{206A}")
    }

    @Test func onlyOurColoursReachTheTerminal() {
        let colored = Console(colors: true)
        let line = colored.paint("ok", .green) + " \u{1B}[31mforged\u{1B}[0m \u{E000}1\u{E001}31m"
        #expect(Console.human(line) == "\u{1B}[32mok\u{1B}[0m \\x1B[31mforged\\x1B[0m \u{E000}1\u{E001}31m")
        let plain = Console(colors: false)
        #expect(Console.human(plain.paint("ok", .green) + " \u{1B}[2J") == "ok \\x1B[2J")
    }

    /// Text from outside next to a marker cannot merge with it: a prepend mark (U+0600) at the
    /// end of painted text, or a combining mark (U+0301) at its start, made one grapheme with the
    /// marker or its `m`, and the marker's raw text or a stray `1m` was printed, the colour left on.
    @Test func markersSurviveNeighbouringMarks() {
        let colored = Console(colors: true)
        #expect(Console.human(colored.paint("app\u{0600}", .dim)) == "\u{1B}[2mapp\u{0600}\u{1B}[0m")
        #expect(Console.human(colored.paint("\u{0301}x.json", .bold)) == "\u{1B}[1m\u{0301}x.json\u{1B}[0m")
        #expect(Console.human("a" + colored.paint("\u{0600}", .red) + "\u{0301}b") == "a\u{1B}[31m\u{0600}\u{1B}[0m\u{0301}b")
    }
}
