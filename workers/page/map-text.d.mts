/** The text options of every map tilebake shows (map-text.mjs). */
export declare const MAP_TEXT_OPTIONS: Readonly<{ localIdeographFontFamily: string }>;
