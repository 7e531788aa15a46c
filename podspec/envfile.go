package podspec

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// ParseEnvFile is the value of key in the env file at path, as the kubelet
// reads a fileKeyRef (pkg/kubelet/util/env ParseEnv, mirrored line for line:
// the kubelet's package is not a module one can import). The format is a
// strict subset of POSIX shell: `KEY='value'` lines, the value always in
// single quotes, taken literally and possibly spanning lines; blank lines,
// leading blanks and `#` comment lines are skipped, a `# comment` may follow
// the closing quote; a blank before '=' is an error, a blank after it makes
// the value empty (`KEY= 'v'` is ""). The first definition of key wins, and
// lines after it are not read; an error on a line before it is an error.
// "" with a nil error means key is not in the file (or is empty: the kubelet
// cannot tell the two apart). Lines are bufio.Scanner's, at most 64 KiB.
func ParseEnvFile(path, key string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	defer func() { _ = file.Close() }()
	return parseEnv(file, path, key)
}

// parseEnv is ParseEnv's loop over r, the file at path.
func parseEnv(r io.Reader, path, key string) (string, error) {
	scanner := bufio.NewScanner(r)
	lineNum := 0
	for scanner.Scan() {
		lineNum++
		line := strings.TrimLeft(scanner.Text(), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		eqIdx := strings.Index(line, "=")
		if eqIdx == -1 {
			return "", fmt.Errorf("invalid environment variable format at line %d: missing '='", lineNum)
		}
		varNamePart := line[:eqIdx]
		varName := strings.TrimRight(varNamePart, " \t")
		if varName == "" {
			return "", fmt.Errorf("invalid environment variable format at line %d: empty variable name", lineNum)
		}
		if varNamePart != varName {
			return "", fmt.Errorf("invalid environment variable format at line %d: whitespace before '=' is not allowed", lineNum)
		}
		valuePart := line[eqIdx+1:]
		trimmedValue := strings.TrimLeft(valuePart, " \t")
		if valuePart != trimmedValue {
			// As in a shell, `KEY= 'v'` assigns "" to KEY.
			if varName == key {
				return "", nil
			}
			continue
		}
		if !strings.HasPrefix(trimmedValue, "'") {
			return "", fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", lineNum)
		}
		var value strings.Builder
		rest := trimmedValue[1:]
		startLineNum := lineNum
		for {
			closingIdx := strings.Index(rest, "'")
			if closingIdx != -1 {
				value.WriteString(rest[:closingIdx])
				afterQuote := strings.TrimLeft(rest[closingIdx+1:], " \t")
				if afterQuote != "" && !strings.HasPrefix(afterQuote, "#") {
					return "", fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", lineNum)
				}
				if varName == key {
					return value.String(), nil
				}
				break
			}
			value.WriteString(rest)
			value.WriteString("\n")
			if !scanner.Scan() {
				// Also a read error here: ParseEnv reports the quote.
				return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", startLineNum)
			}
			lineNum++
			rest = scanner.Text()
		}
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("error reading environment variable file %q: %w", path, err)
	}
	return "", nil
}
