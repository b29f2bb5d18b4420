# ps_accuracy.gp — tpbench report chart "Parameter server: from scratch vs builtin"
# Data: ps_accuracy.dat. Redraw from this directory: gnuplot ps_accuracy.gp
# (writes ps_accuracy.png and ps_accuracy.svg).
set encoding utf8
set terminal pngcairo noenhanced size 1100,620 font 'Sans,11'
set output 'ps_accuracy.png'
set label 101 "Parameter server: from scratch vs builtin" at screen 0.5, screen 0.964516 center font ',14'
set label 102 "test accuracy after each epoch, median over repeats; batch 128/device, 4096 samples/epoch, 2 epochs (1 other config not shown: report --where" at screen 0.5, screen 0.925806 center font ',10' textcolor rgb '#444444'
set label 103 "KEY=VALUE draws another)" at screen 0.5, screen 0.898387 center font ',10' textcolor rgb '#444444'
set tmargin 6
set grid lc rgb '#dddddd'
set key outside right top Left reverse
set xlabel "epoch"
set ylabel "test accuracy (%)"
set xtics ("1" 1, "2" 2)
set yrange [0:*]
set yrange [*:*]
set xrange [0.8:2.2]
plot 'ps_accuracy.dat' index 0 using 1:2 with linespoints title "param_server (from scratch) N=1" lc rgb '#1b9e77' dt 1 lw 2 pt 7 ps 1.2, \
     'ps_accuracy.dat' index 1 using 1:2 with linespoints title "param_server (from scratch) N=2" lc rgb '#d95f02' dt 1 lw 2 pt 7 ps 1.2, \
     'ps_accuracy.dat' index 2 using 1:2 with linespoints title "param_server (from scratch) N=3" lc rgb '#7570b3' dt 1 lw 2 pt 7 ps 1.2, \
     'ps_accuracy.dat' index 3 using 1:2 with linespoints title "param_server (from scratch) N=4" lc rgb '#e7298a' dt 1 lw 2 pt 7 ps 1.2, \
     'ps_accuracy.dat' index 4 using 1:2 with linespoints title "data_parallel (builtin) N=1" lc rgb '#1b9e77' dt 2 lw 2 pt 5 ps 1.2, \
     'ps_accuracy.dat' index 5 using 1:2 with linespoints title "data_parallel (builtin) N=2" lc rgb '#d95f02' dt 2 lw 2 pt 5 ps 1.2, \
     'ps_accuracy.dat' index 6 using 1:2 with linespoints title "data_parallel (builtin) N=3" lc rgb '#7570b3' dt 2 lw 2 pt 5 ps 1.2, \
     'ps_accuracy.dat' index 7 using 1:2 with linespoints title "data_parallel (builtin) N=4" lc rgb '#e7298a' dt 2 lw 2 pt 5 ps 1.2
set terminal svg noenhanced size 1100,620 dynamic font 'Sans,11' background rgb 'white'
set output 'ps_accuracy.svg'
replot
set output
