package org.rocketmqpy.compat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code --name value} options; a name may repeat, and {@code --flag} without a value means "true". */
final class Args {
    private final Map<String, List<String>> values = new LinkedHashMap<>();

    static Args parse(String[] argv) {
        Args a = new Args();
        for (int i = 0; i < argv.length; i++) {
            String tok = argv[i];
            if (!tok.startsWith("--") || tok.length() == 2) {
                throw new IllegalArgumentException("expected --option, got: " + tok);
            }
            String name = tok.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq > 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
                value = argv[++i];
            } else {
                value = "true";
            }
            a.values.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
        }
        return a;
    }

    boolean has(String name) {
        return values.containsKey(name);
    }

    String get(String name, String dflt) {
        List<String> v = values.get(name);
        return v == null ? dflt : v.get(v.size() - 1);
    }

    String require(String name) {
        String v = get(name, null);
        if (v == null) {
            throw new IllegalArgumentException("missing required option --" + name);
        }
        return v;
    }

    int getInt(String name, int dflt) {
        String v = get(name, null);
        return v == null ? dflt : Integer.parseInt(v);
    }

    long getLong(String name, long dflt) {
        String v = get(name, null);
        return v == null ? dflt : Long.parseLong(v);
    }

    List<String> all(String name) {
        List<String> v = values.get(name);
        return v == null ? Collections.<String>emptyList() : v;
    }

    /** Repeated {@code k=v} options as an ordered map. */
    Map<String, String> pairs(String name) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String kv : all(name)) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--" + name + " expects key=value, got: " + kv);
            }
            m.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return m;
    }
}
