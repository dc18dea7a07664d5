/** The text options of every map tilebake shows (text.mjs). */
export declare const MAP_TEXT_OPTIONS: Readonly<{ localIdeographFontFamily: string }>;
