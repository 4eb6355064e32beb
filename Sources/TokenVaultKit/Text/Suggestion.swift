import Dispatch
import FoundationEssentials
import Glibc

/// "Did you mean …": the closest of the valid names to a misspelt one, by
/// edit distance (a swapped pair of letters counts one), when it is close
/// enough to be what was meant; and the full list of valid names otherwise.
public enum Suggestion {
    /// Optimal string alignment distance: insertions, deletions, substitutions
    /// and transpositions of neighbours, on characters, case ignored.
    public static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a.lowercased()), y = Array(b.lowercased())
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[x.count][y.count]
    }

    /// The candidate closest to `word`, when it is close: at most one edit for
    /// short words, two from five characters, three from nine.
    public static func closest(to word: String, in candidates: [String]) -> String? {
        let bound = word.count >= 9 ? 3 : word.count >= 5 ? 2 : 1
        let scored = candidates.filter { $0 != word }.map { ($0, distance(word, $0)) }.filter { $0.1 <= bound }
        return scored.min { ($0.1, $0.0) < ($1.1, $1.0) }?.0
    }

    /// "did you mean X? " (when one is close) followed by `listName` and every candidate.
    public static func text(for word: String, in candidates: [String], listName: String) -> String {
        let close = closest(to: word, in: candidates).map { "did you mean \(ShellWord.word($0))? " } ?? ""
        return close + "\(listName): " + candidates.joined(separator: ", ")
    }
}
